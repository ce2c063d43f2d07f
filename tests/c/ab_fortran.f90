! ab_fortran: cabi/aar.f90 from Fortran. Iterations marked with the module's calls, each labelled
! (a C string), around PUTs made by a small C helper over the emulated uGNI (ab_fortran_posts.c).
! Prints "fortran ok" when every call returned what aar.h says it returns.
program ab_fortran
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_long
  use aar
  use ab_posts
  implicit none
  integer :: it, bad
  integer(c_long), parameter :: bytes = 8192

  bad = 0
  if (posts_setup(bytes) /= 0) stop 1
  if (aar_iteration_index() /= -1_c_int64_t) bad = bad + 1
  if (aar_iteration_end() /= AAR_EINVAL) bad = bad + 1
  if (aar_iteration_label("two words" // c_null_char) /= AAR_EINVAL) bad = bad + 1
  do it = 0, 3
    if (mod(it, 2) == 0) then
      if (aar_iteration_label("isolated" // c_null_char) /= AAR_OK) bad = bad + 1
    end if
    if (aar_iteration_begin() /= AAR_OK) bad = bad + 1
    if (aar_iteration_index() /= int(it, c_int64_t)) bad = bad + 1
    if (mod(it, 2) == 1) then
      if (aar_iteration_label("congested" // c_null_char) /= AAR_OK) bad = bad + 1
    end if
    if (posts_put(bytes, 3_c_int) /= 0) bad = bad + 1
    if (aar_iteration_end() /= AAR_OK) bad = bad + 1
  end do
  if (aar_set_mode_name("ADAPTIVE1" // c_null_char) /= AAR_EINVAL) bad = bad + 1
  if (bad == 0) then
    print '(a)', 'fortran ok'
  else
    print '(a, i0)', 'fortran failures: ', bad
    stop 1
  end if
end program ab_fortran
