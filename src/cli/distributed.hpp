#pragma once
// `mpirun -np K privrace sketch ...`: the same sketch command across MPI ranks (compiled only
// with -DPRIVRACE_MPI=ON, which defines PRIVRACE_WITH_MPI). See distributed.cpp.
namespace privrace::cli {

// True when this process was started by an MPI launcher (mpirun / mpiexec / srun with PMIx):
// read from the launcher's environment, without loading or starting MPI. A plain `privrace
// sketch` never initialises MPI.
bool launched_by_mpi();

// `privrace sketch` (argv after the command name) on every rank: MPI_Init, the options parsed
// and compared across ranks, each rank's share read and built, the exact counts summed to
// rank 0, noise once there, the file written there. Returns the exit code (the same on every
// rank); a failure on any rank stops every rank with that rank's message and leaves no file.
int distributed_sketch(int argc, char** argv);

}  // namespace privrace::cli
