! aar.f90 — Fortran interfaces to the C API of libaar.so (cabi/aar.h), through iso_c_binding.
!
!     use aar
!     rc = aar_iteration_label("congested")   ! a Fortran string: trailing blanks are ignored
!     rc = aar_iteration_begin()
!     ...                                     ! one iteration of the application
!     rc = aar_iteration_end()
!
! Every function returns what its C counterpart returns (AAR_OK, AAR_EINVAL, AAR_EDISABLED; see
! aar.h for the semantics). Names and labels are Fortran strings, as MPI's are: trailing blanks are
! ignored (a label from a character(len=16) variable is its text), and a c_null_char, if the string
! holds one, ends it (so "congested" // c_null_char works too). An array of character(c_char),
! ended by c_null_char, is passed to the C function as it is. Fortran has no weak symbols: link with -laar before -lugni (or -lmpi)
! and keep LD_PRELOAD as usual; without libaar.so the program does not link.
module aar
  use, intrinsic :: iso_c_binding, only: c_int, c_int16_t, c_int64_t, c_char, c_null_char
  implicit none
  private
  public :: c_null_char
  public :: AAR_OK, AAR_EINVAL, AAR_EDISABLED
  public :: aar_iteration_begin, aar_iteration_end, aar_iteration_label, aar_iteration_index
  public :: aar_set_mode, aar_set_mode_name, aar_set_auto, aar_disable, aar_enable

  integer(c_int), parameter :: AAR_OK = 0
  integer(c_int), parameter :: AAR_EINVAL = -1
  integer(c_int), parameter :: AAR_EDISABLED = -2

  ! Pin a routing mode: GNI_DLVMODE_ADAPTIVE0..3 (0, 32, 64, 128), given as a default integer
  ! (aar_set_mode(128)) or as an integer(c_int16_t), C's uint16_t. A value out of uint16_t's range
  ! is AAR_EINVAL, as every value but those four is.
  interface aar_set_mode
    function aar_set_mode_c(dlvr_mode) bind(C, name="aar_set_mode") result(rc)
      import :: c_int, c_int16_t
      integer(c_int16_t), value :: dlvr_mode
      integer(c_int) :: rc
    end function aar_set_mode_c
    module procedure aar_set_mode_default
  end interface aar_set_mode

  ! Label the iteration in progress, or the next one: 1 to 64 characters from
  ! A-Z a-z 0-9 - _ . : + / = @ (trailing blanks ignored).
  interface aar_iteration_label
    function aar_iteration_label_c(label) bind(C, name="aar_iteration_label") result(rc)
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: label
      integer(c_int) :: rc
    end function aar_iteration_label_c
    module procedure aar_iteration_label_text
  end interface aar_iteration_label

  ! aar_set_mode by name, as AAR_MODE takes it ("ADAPTIVE3", "auto", "steady", "off").
  interface aar_set_mode_name
    function aar_set_mode_name_c(name) bind(C, name="aar_set_mode_name") result(rc)
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int) :: rc
    end function aar_set_mode_name_c
    module procedure aar_set_mode_name_text
  end interface aar_set_mode_name

  interface
    ! Begin the next iteration (ending the one in progress first, if any).
    function aar_iteration_begin() bind(C, name="aar_iteration_begin") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function aar_iteration_begin

    ! End the iteration in progress; AAR_EINVAL when none is.
    function aar_iteration_end() bind(C, name="aar_iteration_end") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function aar_iteration_end


    ! The index of the iteration in progress (0, 1, ...), or -1 when none is.
    function aar_iteration_index() bind(C, name="aar_iteration_index") result(i)
      import :: c_int64_t
      integer(c_int64_t) :: i
    end function aar_iteration_index

    function aar_set_auto() bind(C, name="aar_set_auto") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function aar_set_auto

    function aar_disable() bind(C, name="aar_disable") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function aar_disable

    function aar_enable() bind(C, name="aar_enable") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function aar_enable
  end interface

contains

  ! aar_set_mode for a default integer: a value c_int16_t cannot hold is refused here, not wrapped
  ! into one of the four (65568 is not 32).
  function aar_set_mode_default(dlvr_mode) result(rc)
    integer, value :: dlvr_mode
    integer(c_int) :: rc
    if (dlvr_mode < 0 .or. dlvr_mode > huge(0_c_int16_t)) then
      rc = AAR_EINVAL
    else
      rc = aar_set_mode_c(int(dlvr_mode, c_int16_t))
    end if
  end function aar_set_mode_default

  ! A Fortran string as the C string the library reads: up to its first c_null_char if it holds
  ! one, without trailing blanks, then c_null_char. Without this a blank-padded variable was
  ! refused, and one with no c_null_char was read on past its end (the next element of an array:
  ! "isolated" then "congested" read as the label "isolatedcongested").
  pure function c_string(text) result(c)
    character(len=*), intent(in) :: text
    character(len=:), allocatable :: c
    integer :: n
    n = index(text, c_null_char) - 1
    if (n < 0) n = len(text)
    c = trim(text(1:n)) // c_null_char
  end function c_string

  function aar_iteration_label_text(label) result(rc)
    character(len=*), intent(in) :: label
    integer(c_int) :: rc
    rc = aar_iteration_label_c(c_string(label))
  end function aar_iteration_label_text

  function aar_set_mode_name_text(name) result(rc)
    character(len=*), intent(in) :: name
    integer(c_int) :: rc
    rc = aar_set_mode_name_c(c_string(name))
  end function aar_set_mode_name_text
end module aar
