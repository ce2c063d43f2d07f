! aar.f90 — Fortran interfaces to the C API of libaar.so (cabi/aar.h), through iso_c_binding.
!
!     use aar
!     rc = aar_iteration_label("congested" // c_null_char)   ! strings are C strings: end them
!     rc = aar_iteration_begin()                              ! with c_null_char
!     ...                                                     ! one iteration of the application
!     rc = aar_iteration_end()
!
! Every function returns what its C counterpart returns (AAR_OK, AAR_EINVAL, AAR_EDISABLED; see
! aar.h for the semantics). Fortran has no weak symbols: link with -laar before -lugni (or -lmpi)
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

    ! Label the iteration in progress, or the next one: a C string (end it with c_null_char) of
    ! 1 to 64 characters from A-Z a-z 0-9 - _ . : + / = @.
    function aar_iteration_label(label) bind(C, name="aar_iteration_label") result(rc)
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: label
      integer(c_int) :: rc
    end function aar_iteration_label

    ! The index of the iteration in progress (0, 1, ...), or -1 when none is.
    function aar_iteration_index() bind(C, name="aar_iteration_index") result(i)
      import :: c_int64_t
      integer(c_int64_t) :: i
    end function aar_iteration_index

    ! The same by name, as AAR_MODE takes it ("ADAPTIVE3", "auto", "steady", "off"), a C string.
    function aar_set_mode_name(name) bind(C, name="aar_set_mode_name") result(rc)
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int) :: rc
    end function aar_set_mode_name

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
end module aar
