// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mpi_cpu.so: CPU cost of mpi_bench's allreduce runs, preloaded by
 * `rinxctl compare` (mpirun -x LD_PRELOAD=...) through the MPI profiling
 * interface; mpi_bench itself is unchanged.
 *
 * mpi_bench does, per run: fill, MPI_Barrier, MPI_Allreduce, MPI_Reduce of
 * the elapsed time to rank 0 (MAX), check. Rank 0 reads the machine-wide
 * busy ticks of /proc/stat (user nice system irq softirq steal: every process
 * and softirq of every namespace) when the barrier returns and again when
 * the time reduction returns, by which time every rank has finished its
 * allreduce. It prints one JSON line per run on stdout, before mpi_bench's
 * line of that size:
 *   {"cpu_bytes":B,"busy_ticks":T,"hz":H}
 * Built by rinxctl compare with mpicc -shared (not part of make).
 */
#include <stdio.h>
#include <unistd.h>
#include <mpi.h>

static int cpu_rank = -1, cpu_armed;
static unsigned long long cpu_t0, cpu_bytes;

static unsigned long long busy_ticks(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		v[0] = v[1] = v[2] = v[5] = v[6] = v[7] = 0;
	fclose(f);
	return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

int MPI_Barrier(MPI_Comm comm)
{
	int ret = PMPI_Barrier(comm);

	if (cpu_rank < 0)
		PMPI_Comm_rank(MPI_COMM_WORLD, &cpu_rank);
	if (cpu_rank == 0) {
		cpu_t0 = busy_ticks();
		cpu_armed = 1;
		cpu_bytes = 0;
	}
	return ret;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
		  MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	int size = 0;

	if (cpu_armed) {
		PMPI_Type_size(dt, &size);
		cpu_bytes = (unsigned long long)count * size;
	}
	return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
	       MPI_Op op, int root, MPI_Comm comm)
{
	int ret = PMPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm);

	if (cpu_rank == 0 && cpu_armed && cpu_bytes) {
		printf("{\"cpu_bytes\":%llu,\"busy_ticks\":%llu,\"hz\":%ld}\n",
		       cpu_bytes, busy_ticks() - cpu_t0, sysconf(_SC_CLK_TCK));
		fflush(stdout);
		cpu_armed = 0;
	}
	return ret;
}
