! ab_mpi.f90: ab_mpi.c's allreduce mode from Fortran, through the MPI library's Fortran bindings
! (`use mpi`), so that AAR_AB_BOUNDARY=MPI_Allreduce:2 is seen to mark a Fortran program's
! iterations. Per iteration: MPI_ALLREDUCE, one RDMA PUT of BYTES over the emulated uGNI
! (ab_fortran_posts.c, through ab_posts.f90), MPI_ALLREDUCE, one PUT; a last MPI_ALLREDUCE
! closes the last iteration.
!
!   ab_mpi_fortran ITERS BYTES
!
! Prints "rank R of N: ok" on stdout; stops with status 1 if a call or a sum was wrong.
program ab_mpi_fortran
  use, intrinsic :: iso_c_binding, only: c_int, c_long
  use mpi
  use ab_posts
  implicit none
  integer :: ierr, rank, nranks, it, iters, bad, one, total
  integer(c_long) :: bytes
  character(len=32) :: arg

  bad = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call get_command_argument(1, arg)
  read (arg, *) iters
  call get_command_argument(2, arg)
  read (arg, *) bytes
  one = 1
  do it = 0, iters
    call MPI_Allreduce(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS .or. total /= nranks) bad = bad + 1
    if (it == iters) exit
    ! libaar.so is initialised at the first boundary call: the NICs come after it.
    if (it == 0) then
      if (posts_setup(bytes) /= 0) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    if (posts_put(bytes, 1_c_int) /= 0) bad = bad + 1
    call MPI_Allreduce(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS .or. total /= nranks) bad = bad + 1
    if (posts_put(bytes, 1_c_int) /= 0) bad = bad + 1
  end do
  if (bad == 0) then
    print '(a, i0, a, i0, a)', 'rank ', rank, ' of ', nranks, ': ok'
  else
    print '(a, i0, a, i0, a, i0)', 'rank ', rank, ' of ', nranks, ': FAILED ', bad
  end if
  call MPI_Finalize(ierr)
  if (bad /= 0) stop 1
end program ab_mpi_fortran
