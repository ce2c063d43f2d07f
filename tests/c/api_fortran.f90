! api_fortran: aar_set_mode from Fortran (cabi/aar.f90), given a mode as the module says: a default
! integer (32) or an integer(c_int16_t) (128_c_int16_t), around PUTs over the emulated uGNI
! (ab_fortran_posts.c). A default integer that c_int16_t cannot hold is refused, not wrapped into
! one of the four modes. Then names and labels as Fortran strings: from blank-padded variables of an
! array, without c_null_char (the policy ADAPTIVE2, iterations 0 "isolated" and 1 "congested"), and
! with it after the padding (iteration 2 "isolated"); a label with a blank inside is refused.
! Prints "fortran modes ok" when every call returned what aar.h says it returns.
program api_fortran
  use, intrinsic :: iso_c_binding, only: c_int, c_int16_t, c_long
  use aar
  use ab_posts
  implicit none
  integer :: bad, it
  character(len=16), parameter :: policy = 'ADAPTIVE2'
  character(len=16) :: labels(2) = [character(len=16) :: 'isolated', 'congested']
  integer(c_long), parameter :: bytes = 8192

  bad = 0
  if (posts_setup(bytes) /= 0) stop 1
  if (aar_set_mode(32) /= AAR_OK) bad = bad + 1
  if (posts_put(bytes, 3_c_int) /= 0) bad = bad + 1
  if (aar_set_mode(65536 + 128) /= AAR_EINVAL) bad = bad + 1
  if (aar_set_mode(-1) /= AAR_EINVAL) bad = bad + 1
  if (aar_set_mode(1) /= AAR_EINVAL) bad = bad + 1
  if (posts_put(bytes, 3_c_int) /= 0) bad = bad + 1
  if (aar_set_mode(128_c_int16_t) /= AAR_OK) bad = bad + 1
  if (aar_set_mode(-32640_c_int16_t) /= AAR_EINVAL) bad = bad + 1
  if (posts_put(bytes, 3_c_int) /= 0) bad = bad + 1
  if (aar_set_mode_name(policy) /= AAR_OK) bad = bad + 1
  if (posts_put(bytes, 3_c_int) /= 0) bad = bad + 1
  do it = 1, 2
    if (aar_iteration_label(labels(it)) /= AAR_OK) bad = bad + 1
    if (aar_iteration_begin() /= AAR_OK) bad = bad + 1
    if (aar_iteration_end() /= AAR_OK) bad = bad + 1
  end do
  if (aar_iteration_label(labels(1) // c_null_char) /= AAR_OK) bad = bad + 1
  if (aar_iteration_label('two words') /= AAR_EINVAL) bad = bad + 1
  if (aar_iteration_begin() /= AAR_OK) bad = bad + 1
  if (aar_iteration_end() /= AAR_OK) bad = bad + 1
  if (bad == 0) then
    print '(a)', 'fortran modes ok'
  else
    print '(a, i0)', 'fortran failures: ', bad
    stop 1
  end if
end program api_fortran
