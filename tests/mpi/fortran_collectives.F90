! Every collective the MPI layer serves, called from Fortran: blocking,
! nonblocking (completed by MPI_WAIT, MPI_WAITALL beside an MPI_ISEND/IRECV,
! MPI_WAITANY, MPI_WAITSOME, MPI_TESTALL, MPI_TESTANY, MPI_TESTSOME, MPI_TEST)
! and persistent (MPI_STARTALL, MPI_START, MPI_REQUEST_GET_STATUS,
! MPI_REQUEST_FREE); MPI_IN_PLACE and MPI_BOTTOM; reductions of the Fortran
! types (MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_LOGICAL,
! MPI_INTEGER8, MPI_REAL8, MPI_2INTEGER) with SUM, MAX, MIN, LAND, LOR, BAND,
! MINLOC. Every result checked. Built once per binding -- USE_MPIF (include
! 'mpif.h'), USE_MPI (use mpi), USE_F08 (use mpi_f08) -- and per MPI
! (tests/mpi/CMakeLists.txt); run by tests/mpi/test_mpi_layer.sh, which
! compares the library's report with the one rank 0 prints here
! ("railcoll-mpi-expect:" lines: every call railcoll's). The verdict comes after
! MPI_FINALIZE, where the library destroys its communicators. --mpi-alone (the
! test's own check under MPI's collectives) leaves out what MPICH 4.0.2 itself
! gets wrong: 0-based indices from its mpi_f08 MPI_WAITANY and MPI_WAITSOME,
! MPI_REQUEST_GET_STATUS's flag on
! an inactive persistent collective, and its persistent collectives' data from
! the second start on (one start only).
program fortran_collectives
#if defined(USE_F08)
  use mpi_f08
#if defined(MPIX_PERSISTENT)
  use mpi_f08_ext
#endif
#elif defined(USE_MPI)
  use mpi
#endif
  implicit none
#if defined(USE_MPIF)
  include 'mpif.h'
#endif
#if defined(USE_F08)
#define COMM type(MPI_Comm)
#define REQUEST type(MPI_Request)
#define DATATYPE type(MPI_Datatype)
#define STATUS type(MPI_Status)
#define SOURCE_OF(s) s%MPI_SOURCE
#define ERROR_OF(s) s%MPI_ERROR
#else
#define COMM integer
#define REQUEST integer
#define DATATYPE integer
#define STATUS integer, dimension(MPI_STATUS_SIZE)
#define SOURCE_OF(s) s(MPI_SOURCE)
#define ERROR_OF(s) s(MPI_ERROR)
#endif
#if defined(MPIX_PERSISTENT)
#define ALLGATHER_INIT MPIX_Allgather_init
#define ALLREDUCE_INIT MPIX_Allreduce_init
#define BCAST_INIT MPIX_Bcast_init
#define BARRIER_INIT MPIX_Barrier_init
#else
#define ALLGATHER_INIT MPI_Allgather_init
#define ALLREDUCE_INIT MPI_Allreduce_init
#define BCAST_INIT MPI_Bcast_init
#define BARRIER_INIT MPI_Barrier_init
#endif
  ! The served collectives in the library's report order (src/mpi/served.def).
  integer, parameter :: ALLGATHER = 1, ALLGATHERV = 2, BCAST = 3, GATHER = 4, ALLREDUCE = 5, BARRIER = 6, &
                        REDUCE_SCATTER_BLOCK = 7, REDUCE_SCATTER = 8, REDUCE = 9, ALLTOALL = 10, ALLTOALLV = 11, &
                        SCATTER = 12, SCATTERV = 13, GATHERV = 14, SCAN = 15, EXSCAN = 16, ALLTOALLW = 17, &
                        NCOLL = 17
  character(len=24), parameter :: names(NCOLL) = [character(len=24) :: 'Allgather', 'Allgatherv', 'Bcast', &
      'Gather', 'Allreduce', 'Barrier', 'Reduce_scatter_block', 'Reduce_scatter', 'Reduce', 'Alltoall', &
      'Alltoallv', 'Scatter', 'Scatterv', 'Gatherv', 'Scan', 'Exscan', 'Alltoallw']
  integer :: expected(3, NCOLL)  ! calls per form (blocking, nonblocking, persistent) and collective
  integer :: ierr, me, n, errors, wrong, i, r, k, done, idx, outcount, flag_count, first
  logical :: flag, alone
  character(len=16) :: arg
  COMM :: world
  integer, allocatable :: a(:), b(:), c(:), counts(:), displs(:), rcounts(:), rdispls(:)
  double precision, allocatable :: d(:), e(:)

  errors = 0
  expected = 0
  call get_command_argument(1, arg)
  alone = arg == '--mpi-alone'
  first = 1  ! the first index a completion call may give
  if (alone) first = 0
  call MPI_Init(ierr)
  world = MPI_COMM_WORLD
  call MPI_Comm_rank(world, me, ierr)
  call MPI_Comm_size(world, n, ierr)
  allocate(counts(0:n-1), displs(0:n-1), rcounts(0:n-1), rdispls(0:n-1))

  call blocking()
  call reductions()
  call bottom()
  call nonblocking()
  call persistent()

  call MPI_Allreduce(errors, wrong, 1, MPI_INTEGER, MPI_SUM, world, ierr)
  expected(1, ALLREDUCE) = expected(1, ALLREDUCE) + 1
  if (me == 0) then
    do r = 0, n - 1
      do k = 1, NCOLL
        write(*, '(A,I0,A,A,A,I0,A)') 'railcoll-mpi-expect: rank ', r, ': MPI_', trim(names(k)), ' railcoll=', &
            expected(1, k), ' mpi=0'
        if (expected(2, k) > 0) write(*, '(A,I0,A,A,A,A,I0,A)') 'railcoll-mpi-expect: rank ', r, ': MPI_I', &
            achar(iachar(names(k)(1:1)) + 32), trim(names(k)(2:)), ' railcoll=', expected(2, k), ' mpi=0'
        if (expected(3, k) > 0) write(*, '(A,I0,A,A,A,I0,A)') 'railcoll-mpi-expect: rank ', r, ': MPI_', &
            trim(names(k)) // '_init', ' railcoll=', expected(3, k), ' mpi=0'
      end do
    end do
    flush(6)
  end if
  call MPI_Finalize(ierr)
  if (me == 0) write(*, '(A,I0,A)') 'fortran collectives correct: ', wrong, ' wrong'
  if (wrong /= 0 .or. ierr /= MPI_SUCCESS) stop 1

contains

  ! The value rank r contributes at index j in call c.
  integer function val(r, j, c)
    integer, intent(in) :: r, j, c
    val = r * 1000 + j * 7 + c * 131
  end function

  subroutine expect(what, got, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: got, want
    if (got /= want) then
      errors = errors + 1
      if (errors <= 10) write(*, '(A,I0,A,A,A,I0,A,I0)') 'rank ', me, ': FAIL: ', what, ': got ', got, ', expected ', want
    end if
  end subroutine

  subroutine ok(what, cond)
    character(len=*), intent(in) :: what
    logical, intent(in) :: cond
    if (.not. cond) call expect(what, 0, 1)
  end subroutine

  subroutine served(form, coll)
    integer, intent(in) :: form, coll
    expected(form, coll) = expected(form, coll) + 1
  end subroutine

  subroutine blocking()
    integer :: total
    ! MPI_ALLGATHER, and in place
    allocate(a(3), b(3 * n))
    a = [(val(me, i, 1), i = 1, 3)]
    call MPI_Allgather(a, 3, MPI_INTEGER, b, 3, MPI_INTEGER, world, ierr)
    call served(1, ALLGATHER)
    do r = 0, n - 1
      do i = 1, 3
        call expect('allgather', b(r * 3 + i), val(r, i, 1))
      end do
    end do
    b = -1
    b(me * 3 + 1 : me * 3 + 3) = [(val(me, i, 2), i = 1, 3)]
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, 3, MPI_INTEGER, world, ierr)
    call served(1, ALLGATHER)
    do r = 0, n - 1
      do i = 1, 3
        call expect('allgather in place', b(r * 3 + i), val(r, i, 2))
      end do
    end do
    call expect('allgather ierror', ierr, MPI_SUCCESS)
    deallocate(a, b)

    ! MPI_ALLGATHERV: rank r sends r+1 values; the blocks in reverse rank order
    total = n * (n + 1) / 2
    allocate(a(me + 1), b(total))
    a = [(val(me, i, 3), i = 1, me + 1)]
    k = 0
    do r = n - 1, 0, -1
      counts(r) = r + 1
      displs(r) = k
      k = k + r + 1
    end do
    call MPI_Allgatherv(a, me + 1, MPI_INTEGER, b, counts, displs, MPI_INTEGER, world, ierr)
    call served(1, ALLGATHERV)
    do r = 0, n - 1
      do i = 1, r + 1
        call expect('allgatherv', b(displs(r) + i), val(r, i, 3))
      end do
    end do
    deallocate(a, b)

    ! MPI_BCAST of DOUBLE PRECISION from the last rank
    allocate(d(5))
    d = -1
    if (me == n - 1) d = [(dble(val(me, i, 4)) + 0.25d0, i = 1, 5)]
    call MPI_Bcast(d, 5, MPI_DOUBLE_PRECISION, n - 1, world, ierr)
    call served(1, BCAST)
    do i = 1, 5
      call ok('bcast', d(i) == dble(val(n - 1, i, 4)) + 0.25d0)
    end do
    deallocate(d)

    ! MPI_GATHER to rank 0, then in place at the root
    allocate(a(2), b(2 * n))
    a = [(val(me, i, 5), i = 1, 2)]
    b = -1
    call MPI_Gather(a, 2, MPI_INTEGER, b, 2, MPI_INTEGER, 0, world, ierr)
    call served(1, GATHER)
    if (me == 0) then
      do r = 0, n - 1
        do i = 1, 2
          call expect('gather', b(r * 2 + i), val(r, i, 5))
        end do
      end do
    end if
    b = -1
    a = [(val(me, i, 6), i = 1, 2)]
    if (me == 0) then
      b(1:2) = a
      call MPI_Gather(MPI_IN_PLACE, 2, MPI_INTEGER, b, 2, MPI_INTEGER, 0, world, ierr)
      do r = 0, n - 1
        do i = 1, 2
          call expect('gather in place', b(r * 2 + i), val(r, i, 6))
        end do
      end do
    else
      call MPI_Gather(a, 2, MPI_INTEGER, b, 2, MPI_INTEGER, 0, world, ierr)
    end if
    call served(1, GATHER)
    deallocate(a, b)

    ! MPI_GATHERV to rank 0: r+1 values each, in rank order with a gap of one
    allocate(a(me + 1), b(total + n))
    a = [(val(me, i, 7), i = 1, me + 1)]
    b = -1
    k = 0
    do r = 0, n - 1
      counts(r) = r + 1
      displs(r) = k
      k = k + r + 2
    end do
    call MPI_Gatherv(a, me + 1, MPI_INTEGER, b, counts, displs, MPI_INTEGER, 0, world, ierr)
    call served(1, GATHERV)
    if (me == 0) then
      do r = 0, n - 1
        do i = 1, r + 1
          call expect('gatherv', b(displs(r) + i), val(r, i, 7))
        end do
        call expect('gatherv gap', b(displs(r) + r + 2), -1)
      end do
    end if
    deallocate(a, b)

    ! MPI_SCATTER from rank 0, then in place at the root
    allocate(a(3 * n), b(3))
    a = [(val(0, i, 8), i = 1, 3 * n)]
    call MPI_Scatter(a, 3, MPI_INTEGER, b, 3, MPI_INTEGER, 0, world, ierr)
    call served(1, SCATTER)
    do i = 1, 3
      call expect('scatter', b(i), val(0, me * 3 + i, 8))
    end do
    if (me == 0) then
      call MPI_Scatter(a, 3, MPI_INTEGER, MPI_IN_PLACE, 3, MPI_INTEGER, 0, world, ierr)
    else
      b = -1
      call MPI_Scatter(a, 3, MPI_INTEGER, b, 3, MPI_INTEGER, 0, world, ierr)
      do i = 1, 3
        call expect('scatter in place', b(i), val(0, me * 3 + i, 8))
      end do
    end if
    call served(1, SCATTER)
    deallocate(a, b)

    ! MPI_SCATTERV from the last rank: r+1 values to rank r
    allocate(a(total), b(me + 1))
    a = [(val(n - 1, i, 9), i = 1, total)]
    k = 0
    do r = 0, n - 1
      counts(r) = r + 1
      displs(r) = k
      k = k + r + 1
    end do
    call MPI_Scatterv(a, counts, displs, MPI_INTEGER, b, me + 1, MPI_INTEGER, n - 1, world, ierr)
    call served(1, SCATTERV)
    do i = 1, me + 1
      call expect('scatterv', b(i), val(n - 1, displs(me) + i, 9))
    end do
    deallocate(a, b)

    ! MPI_ALLTOALL, 2 values to each rank
    allocate(a(2 * n), b(2 * n))
    do r = 0, n - 1
      a(r * 2 + 1 : r * 2 + 2) = [val(me, r * 2 + 1, 10), val(me, r * 2 + 2, 10)]
    end do
    call MPI_Alltoall(a, 2, MPI_INTEGER, b, 2, MPI_INTEGER, world, ierr)
    call served(1, ALLTOALL)
    do r = 0, n - 1
      do i = 1, 2
        call expect('alltoall', b(r * 2 + i), val(r, me * 2 + i, 10))
      end do
    end do
    deallocate(a, b)

    ! MPI_ALLTOALLV: (me + d) mod 3 + 1 values to rank d
    k = 0
    do r = 0, n - 1
      counts(r) = mod(me + r, 3) + 1
      displs(r) = k
      k = k + counts(r)
    end do
    allocate(a(k))
    do r = 0, n - 1
      do i = 1, counts(r)
        a(displs(r) + i) = val(me, r * 10 + i, 11)
      end do
    end do
    k = 0
    do r = 0, n - 1
      rcounts(r) = mod(r + me, 3) + 1
      rdispls(r) = k
      k = k + rcounts(r)
    end do
    allocate(b(k))
    call MPI_Alltoallv(a, counts, displs, MPI_INTEGER, b, rcounts, rdispls, MPI_INTEGER, world, ierr)
    call served(1, ALLTOALLV)
    do r = 0, n - 1
      do i = 1, rcounts(r)
        call expect('alltoallv', b(rdispls(r) + i), val(r, me * 10 + i, 11))
      end do
    end do
    deallocate(a, b)

    call MPI_Barrier(world, ierr)
    call served(1, BARRIER)
    call expect('barrier ierror', ierr, MPI_SUCCESS)
  end subroutine

  subroutine reductions()
    real :: x(2), y(2)
    real(kind=8) :: x8(2), y8(2)
    integer(kind=8) :: l8(2), m8(2)
    logical :: p(2), q(2)
    integer :: pair(2, 2), best(2, 2)
    integer :: root

    ! MPI_ALLREDUCE of every Fortran type railcoll reduces
    allocate(a(3), b(3))
    a = [(val(me, i, 12), i = 1, 3)]
    call MPI_Allreduce(a, b, 3, MPI_INTEGER, MPI_SUM, world, ierr)
    call served(1, ALLREDUCE)
    do i = 1, 3
      call expect('allreduce integer sum', b(i), sum([(val(r, i, 12), r = 0, n - 1)]))
    end do
    call MPI_Allreduce(a, b, 3, MPI_INTEGER, MPI_BAND, world, ierr)
    call served(1, ALLREDUCE)
    do i = 1, 3
      k = -1
      do r = 0, n - 1
        k = iand(k, val(r, i, 12))
      end do
      call expect('allreduce integer band', b(i), k)
    end do
    b = a
    call MPI_Allreduce(MPI_IN_PLACE, b, 3, MPI_INTEGER, MPI_MAX, world, ierr)
    call served(1, ALLREDUCE)
    do i = 1, 3
      call expect('allreduce in place integer max', b(i), val(n - 1, i, 12))
    end do
    deallocate(a, b)
    x = [real(me) + 0.5, -real(me)]
    call MPI_Allreduce(x, y, 2, MPI_REAL, MPI_MAX, world, ierr)
    call served(1, ALLREDUCE)
    call ok('allreduce real max', y(1) == real(n - 1) + 0.5 .and. y(2) == 0.0)
    allocate(d(2), e(2))
    d = [dble(me) * 0.5d0, 1.0d0]
    call MPI_Allreduce(d, e, 2, MPI_DOUBLE_PRECISION, MPI_SUM, world, ierr)
    call served(1, ALLREDUCE)
    call ok('allreduce double precision sum', e(1) == dble(n * (n - 1)) * 0.25d0 .and. e(2) == dble(n))
    deallocate(d, e)
    x8 = [dble(me) + 0.125d0, dble(n - me)]
    call MPI_Allreduce(x8, y8, 2, MPI_REAL8, MPI_MIN, world, ierr)
    call served(1, ALLREDUCE)
    call ok('allreduce real8 min', y8(1) == 0.125d0 .and. y8(2) == 1.0d0)
    l8 = [int(me, 8) * 4000000000_8, 1_8]
    call MPI_Allreduce(l8, m8, 2, MPI_INTEGER8, MPI_SUM, world, ierr)
    call served(1, ALLREDUCE)
    call ok('allreduce integer8 sum beyond 2**31', m8(1) == int(n * (n - 1) / 2, 8) * 4000000000_8 .and. m8(2) == n)
    p = [.true., me /= 1]
    call MPI_Allreduce(p, q, 2, MPI_LOGICAL, MPI_LAND, world, ierr)
    call served(1, ALLREDUCE)
    call ok('allreduce logical land', q(1) .and. .not. q(2))
    p = [.false., me == 1]
    call MPI_Allreduce(p, q, 2, MPI_LOGICAL, MPI_LOR, world, ierr)
    call served(1, ALLREDUCE)
    call ok('allreduce logical lor', .not. q(1) .and. q(2))
    ! (value, index) pairs: the least value, its lowest index
    pair(:, 1) = [mod(me, 2), me]
    pair(:, 2) = [-me, me]
    call MPI_Allreduce(pair, best, 2, MPI_2INTEGER, MPI_MINLOC, world, ierr)
    call served(1, ALLREDUCE)
    call ok('allreduce 2integer minloc', best(1, 1) == 0 .and. best(2, 1) == 0 .and. best(1, 2) == -(n - 1) &
            .and. best(2, 2) == n - 1)

    ! MPI_REDUCE to rank 1 (mod n), then in place at the root
    root = mod(1, n)
    allocate(a(4), b(4))
    a = [(val(me, i, 13), i = 1, 4)]
    b = -1
    call MPI_Reduce(a, b, 4, MPI_INTEGER, MPI_SUM, root, world, ierr)
    call served(1, REDUCE)
    if (me == root) then
      do i = 1, 4
        call expect('reduce', b(i), sum([(val(r, i, 13), r = 0, n - 1)]))
      end do
    end if
    if (me == root) then
      b = a
      call MPI_Reduce(MPI_IN_PLACE, b, 4, MPI_INTEGER, MPI_MIN, root, world, ierr)
      do i = 1, 4
        call expect('reduce in place', b(i), val(0, i, 13))
      end do
    else
      call MPI_Reduce(a, b, 4, MPI_INTEGER, MPI_MIN, root, world, ierr)
    end if
    call served(1, REDUCE)
    deallocate(a, b)

    ! MPI_REDUCE_SCATTER_BLOCK: 2 values to each rank
    allocate(a(2 * n), b(2))
    a = [(val(me, i, 14), i = 1, 2 * n)]
    call MPI_Reduce_scatter_block(a, b, 2, MPI_INTEGER, MPI_SUM, world, ierr)
    call served(1, REDUCE_SCATTER_BLOCK)
    do i = 1, 2
      call expect('reduce_scatter_block', b(i), sum([(val(r, me * 2 + i, 14), r = 0, n - 1)]))
    end do
    deallocate(a, b)

    ! MPI_REDUCE_SCATTER of DOUBLE PRECISION: r+1 values to rank r
    k = n * (n + 1) / 2
    allocate(d(k), e(me + 1))
    d = [(dble(val(me, i, 15)), i = 1, k)]
    do r = 0, n - 1
      counts(r) = r + 1
    end do
    call MPI_Reduce_scatter(d, e, counts, MPI_DOUBLE_PRECISION, MPI_SUM, world, ierr)
    call served(1, REDUCE_SCATTER)
    do i = 1, me + 1
      call ok('reduce_scatter', e(i) == dble(sum([(val(r, me * (me + 1) / 2 + i, 15), r = 0, n - 1)])))
    end do
    deallocate(d, e)
  end subroutine

  ! MPI_BOTTOM with a type of absolute addresses.
  subroutine bottom()
    integer :: buf(3)
    integer(kind=MPI_ADDRESS_KIND) :: where(1)
    DATATYPE :: t
    integer :: blocks(1)
    DATATYPE :: types(1)
    buf = -1
    if (me == 0) buf = [(val(0, i, 16), i = 1, 3)]
    call MPI_Get_address(buf, where(1), ierr)
    blocks(1) = 3
    types(1) = MPI_INTEGER
    call MPI_Type_create_struct(1, blocks, where, types, t, ierr)
    call MPI_Type_commit(t, ierr)
    call MPI_Bcast(MPI_BOTTOM, 1, t, 0, world, ierr)
    call served(1, BCAST)
    do i = 1, 3
      call expect('bcast from MPI_BOTTOM', buf(i), val(0, i, 16))
    end do
    call MPI_Type_free(t, ierr)
  end subroutine

  subroutine nonblocking()
    REQUEST :: reqs(16)
    STATUS :: st
#if defined(USE_F08)
    type(MPI_Status) :: sts(16)
#else
    integer :: sts(MPI_STATUS_SIZE, 16)
#endif
    integer :: ag(2), agb(2 * 64), ar(2), arb(2), bc(4), sc(2 * 64), scb(2), p2p_out, p2p_in, g(64)
    integer :: indices(16), left, right, c2(2), c3(2), r4(2), a2(2 * 64), gv(2 * 64)
    if (n > 64) stop 'at most 64 ranks'
    ! Every nonblocking collective at once, with a send and a receive, by MPI_WAITALL.
    ag = [val(me, 1, 20), val(me, 2, 20)]
    ar = [val(me, 1, 21), val(me, 2, 21)]
    bc = -1
    if (me == 0) bc = [(val(0, i, 22), i = 1, 4)]
    sc = [(val(n - 1, i, 23), i = 1, 2 * n)]
    right = mod(me + 1, n)
    left = mod(me + n - 1, n)
    p2p_out = val(me, 0, 24)
    call MPI_Iallgather(ag, 2, MPI_INTEGER, agb, 2, MPI_INTEGER, world, reqs(1), ierr)
    call MPI_Irecv(p2p_in, 1, MPI_INTEGER, left, 7, world, reqs(2), ierr)
    call MPI_Iallreduce(ar, arb, 2, MPI_INTEGER, MPI_SUM, world, reqs(3), ierr)
    call MPI_Ibcast(bc, 4, MPI_INTEGER, 0, world, reqs(4), ierr)
    call MPI_Iscatter(sc, 2, MPI_INTEGER, scb, 2, MPI_INTEGER, n - 1, world, reqs(5), ierr)
    call MPI_Ibarrier(world, reqs(6), ierr)
    call MPI_Isend(p2p_out, 1, MPI_INTEGER, right, 7, world, reqs(7), ierr)
    call MPI_Igather(ag, 1, MPI_INTEGER, g, 1, MPI_INTEGER, 0, world, reqs(8), ierr)
    call served(2, ALLGATHER)
    call served(2, ALLREDUCE)
    call served(2, BCAST)
    call served(2, SCATTER)
    call served(2, BARRIER)
    call served(2, GATHER)
    call MPI_Waitall(8, reqs, sts, ierr)
    call expect('waitall ierror', ierr, MPI_SUCCESS)
    do i = 1, 8
#if defined(USE_F08)
      call expect('waitall status MPI_ERROR', sts(i)%MPI_ERROR, MPI_SUCCESS)
#else
      call expect('waitall status MPI_ERROR', sts(MPI_ERROR, i), MPI_SUCCESS)
#endif
      call ok('waitall left a request', reqs(i) == MPI_REQUEST_NULL)
    end do
    do r = 0, n - 1
      call expect('iallgather', agb(r * 2 + 1), val(r, 1, 20))
      call expect('iallgather', agb(r * 2 + 2), val(r, 2, 20))
    end do
    call expect('iallreduce', arb(2), sum([(val(r, 2, 21), r = 0, n - 1)]))
    call expect('ibcast', bc(4), val(0, 4, 22))
    call expect('iscatter', scb(2), val(n - 1, me * 2 + 2, 23))
    call expect('isend/irecv beside them', p2p_in, val(left, 0, 24))
    if (me == 0) call expect('igather', g(n), val(n - 1, 1, 20))

    ! The rest of the nonblocking family, each by another completion call.
    allocate(a(2 * n), b(2 * n), c(2))
    a = [(val(me, i, 25), i = 1, 2 * n)]
    k = 0
    do r = 0, n - 1
      counts(r) = 2
      displs(r) = k
      k = k + 2
    end do
    call MPI_Ialltoall(a, 2, MPI_INTEGER, b, 2, MPI_INTEGER, world, reqs(1), ierr)
    call MPI_Ireduce_scatter_block(a, c, 2, MPI_INTEGER, MPI_SUM, world, reqs(2), ierr)
    call served(2, ALLTOALL)
    call served(2, REDUCE_SCATTER_BLOCK)
    done = 0
    do while (done < 2)
      call MPI_Waitany(2, reqs, idx, st, ierr)
      call ok('waitany index', idx >= first .and. idx <= 2)
      done = done + 1
    end do
    call expect('ialltoall', b(2 * n), val(n - 1, me * 2 + 2, 25))
    call expect('ireduce_scatter_block', c(1), sum([(val(r, me * 2 + 1, 25), r = 0, n - 1)]))

    ! Buffers apart: an outstanding call's buffers are its own until it completes.
    call MPI_Ialltoallv(a, counts, displs, MPI_INTEGER, b, counts, displs, MPI_INTEGER, world, reqs(1), ierr)
    call MPI_Iallgatherv(c, 2, MPI_INTEGER, a2, counts, displs, MPI_INTEGER, world, reqs(2), ierr)
    call MPI_Ireduce_scatter(a, c2, counts, MPI_INTEGER, MPI_MAX, world, reqs(3), ierr)
    call served(2, ALLTOALLV)
    call served(2, ALLGATHERV)
    call served(2, REDUCE_SCATTER)
    done = 0
    do while (done < 3)
      call MPI_Waitsome(3, reqs, outcount, indices, sts, ierr)
      call ok('waitsome outcount', outcount >= 1 .and. outcount <= 3)
      do i = 1, outcount
        call ok('waitsome index', indices(i) >= first .and. indices(i) <= 3)
      end do
      done = done + outcount
    end do
    call MPI_Waitsome(3, reqs, outcount, indices, sts, ierr)
    call expect('waitsome over nothing left', outcount, MPI_UNDEFINED)
    call expect('ialltoallv', b(2 * n), val(n - 1, me * 2 + 2, 25))
    call expect('iallgatherv', a2(1), sum([(val(r, 1, 25), r = 0, n - 1)]))
    call expect('ireduce_scatter', c2(2), val(n - 1, me * 2 + 2, 25))

    gv = -1
    call MPI_Igatherv(c, 2, MPI_INTEGER, gv, counts, displs, MPI_INTEGER, n - 1, world, reqs(1), ierr)
    call MPI_Iscatterv(a2, counts, displs, MPI_INTEGER, c3, 2, MPI_INTEGER, 0, world, reqs(2), ierr)
    call MPI_Ireduce(a, r4, 2, MPI_INTEGER, MPI_SUM, 0, world, reqs(3), ierr)
    call served(2, GATHERV)
    call served(2, SCATTERV)
    call served(2, REDUCE)
    flag = .false.
    do while (.not. flag)
      call MPI_Testall(3, reqs, flag, MPI_STATUSES_IGNORE, ierr)
    end do
    if (me == n - 1) call expect('igatherv', gv(2 * n - 1), a2(2 * n - 1))
    call expect('iscatterv', c3(1), a2(me * 2 + 1))
    if (me == 0) call expect('ireduce', r4(1), sum([(val(r, 1, 25), r = 0, n - 1)]))

    call MPI_Ibarrier(world, reqs(1), ierr)
    call MPI_Iallreduce(MPI_IN_PLACE, c, 2, MPI_INTEGER, MPI_SUM, world, reqs(2), ierr)
    call served(2, BARRIER)
    call served(2, ALLREDUCE)
    done = 0
    do while (done < 2)
      call MPI_Testany(2, reqs, idx, flag, st, ierr)
      if (flag .and. idx /= MPI_UNDEFINED) done = done + 1
    end do
    ! (Not asked: MPI_TESTANY over no active request, whose flag and index
    ! MPICH 4.0.2's mpif.h and use mpi bindings get wrong by themselves.)

    call MPI_Ibcast(c, 2, MPI_INTEGER, n - 1, world, reqs(1), ierr)
    call MPI_Ibarrier(world, reqs(2), ierr)
    call served(2, BCAST)
    call served(2, BARRIER)
    flag_count = 0
    do while (flag_count < 2)
      call MPI_Testsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
      if (outcount /= MPI_UNDEFINED) flag_count = flag_count + outcount
    end do

    call MPI_Igather(c, 2, MPI_INTEGER, b, 2, MPI_INTEGER, 0, world, reqs(1), ierr)
    call served(2, GATHER)
    flag = .false.
    do while (.not. flag)
      call MPI_Test(reqs(1), flag, st, ierr)
    end do
    call ok('test left the request', reqs(1) == MPI_REQUEST_NULL)
    call MPI_Ibarrier(world, reqs(1), ierr)
    call served(2, BARRIER)
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    call expect('wait ierror', ierr, MPI_SUCCESS)
    deallocate(a, b, c)
  end subroutine

  subroutine persistent()
    REQUEST :: reqs(4)
    STATUS :: st
    integer :: ag(3), agb(3 * 64), io(2), bc(2), it, starts
    integer, parameter :: kinds(4) = [ALLGATHER, ALLREDUCE, BCAST, BARRIER]
    ag = 0
    io = 0
    bc = 0
#if defined(MPIX_PERSISTENT) || defined(MPI4_PERSISTENT)
    call ALLGATHER_INIT(ag, 3, MPI_INTEGER, agb, 3, MPI_INTEGER, world, MPI_INFO_NULL, reqs(1), ierr)
    call ALLREDUCE_INIT(MPI_IN_PLACE, io, 2, MPI_INTEGER, MPI_SUM, world, MPI_INFO_NULL, reqs(2), ierr)
    call BCAST_INIT(bc, 2, MPI_INTEGER, n - 1, world, MPI_INFO_NULL, reqs(3), ierr)
    call BARRIER_INIT(world, MPI_INFO_NULL, reqs(4), ierr)
    do i = 1, 4  ! the library counts a persistent call once, at its init
      call served(3, kinds(i))
    end do
    call MPI_Request_get_status(reqs(1), flag, st, ierr)
    call ok('an inactive persistent request is complete', flag .or. alone)
    starts = 5
    if (alone) starts = 1
    do it = 1, starts
      ag = [(val(me, i, 30 + it), i = 1, 3)]
      io = [me, it]
      if (me == n - 1) bc = [it, -it]
      if (mod(it, 2) == 1) then
        call MPI_Startall(4, reqs, ierr)
        call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
      else
        do i = 1, 4
          call MPI_Start(reqs(i), ierr)
        end do
        do i = 4, 1, -1
          call MPI_Wait(reqs(i), st, ierr)
        end do
      end if
      do i = 1, 4
        call ok('a persistent request was freed by its completion', reqs(i) /= MPI_REQUEST_NULL)
      end do
      do r = 0, n - 1
        call expect('persistent allgather', agb(r * 3 + 3), val(r, 3, 30 + it))
      end do
      call expect('persistent allreduce in place', io(1), n * (n - 1) / 2)
      call expect('persistent allreduce in place', io(2), n * it)
      call expect('persistent bcast', bc(2), -it)
    end do
    do i = 1, 4
      call MPI_Request_free(reqs(i), ierr)
      call ok('request_free', reqs(i) == MPI_REQUEST_NULL)
    end do
#endif
  end subroutine

end program
