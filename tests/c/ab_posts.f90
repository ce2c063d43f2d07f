! The C helpers of the Fortran test programs (ab_fortran_posts.c), as Fortran calls them.
module ab_posts
  use, intrinsic :: iso_c_binding, only: c_int, c_long
  implicit none
  interface
    function posts_setup(bytes) bind(C, name="posts_setup") result(rc)
      import :: c_int, c_long
      integer(c_long), value :: bytes
      integer(c_int) :: rc
    end function posts_setup
    function posts_put(bytes, count) bind(C, name="posts_put") result(rc)
      import :: c_int, c_long
      integer(c_long), value :: bytes
      integer(c_int), value :: count
      integer(c_int) :: rc
    end function posts_put
  end interface
end module ab_posts
