// MpiCommunicator under mpirun (2 ranks, works for any number): allreduce_mean
// against the mean written out by hand, one MPI_Allreduce per bucket,
// broadcast of any dtype and layout, barrier, sub-communicators, and errors
// that carry MPI's text, file, line, host and rank.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <utility>

#include "dist/device_placement.h"
#include "dist/make_communicator.h"
#include "dist/mpi_communicator.h"
#include "mpi/check.h"
#include "mpi/comm.h"
#include "util/error.h"
#include "mpi_world.h"

namespace {

using egm::test::world_rank;
using egm::test::world_size;

// Rank r holds value(r, i) = 100 r + i/4 at element i: sums of these are exact
// in float32, so the mean over n ranks is exactly 100 (n-1)/2 + i/4.
torch::Tensor filled(int rank, std::vector<int64_t> shape, torch::Dtype dtype, int64_t first_index) {
  torch::Tensor t = torch::empty(shape, torch::kDouble);
  auto flat = t.view({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) flat[i] = 100.0 * rank + static_cast<double>(first_index + i) / 4.0;
  return t.to(dtype);
}

double hand_mean(int size, int64_t index) { return 100.0 * (size - 1) / 2.0 + static_cast<double>(index) / 4.0; }

std::vector<torch::Tensor> mixed_tensors(int rank) {
  // A GPT's gradient shapes (matrix, vector, scalar, 3-D), plus a float64 loss pair.
  return {filled(rank, {3, 4}, torch::kFloat, 0), filled(rank, {5}, torch::kFloat, 12),
          filled(rank, {}, torch::kFloat, 17),    filled(rank, {2, 3, 2}, torch::kFloat, 18),
          filled(rank, {2}, torch::kDouble, 30),  filled(rank, {7}, torch::kFloat, 32)};
}

void expect_hand_means(const std::vector<torch::Tensor>& t, int size) {
  const std::vector<int64_t> first{0, 12, 17, 18, 30, 32};
  for (size_t k = 0; k < t.size(); ++k) {
    torch::Tensor flat = t[k].to(torch::kDouble).reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i)
      EXPECT_EQ(flat[i].item<double>(), hand_mean(size, first[k] + i)) << "tensor " << k << " element " << i;
  }
}

TEST(MpiCommunicator, RankAndSizeAreThoseOfTheCommunicator) {
  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.rank(), world_rank());
  EXPECT_EQ(comm.size(), world_size());
  EXPECT_EQ(comm.backend(), egm::Backend::mpi);
  EXPECT_NE(comm.comm(), MPI_COMM_WORLD);  // a duplicate
}

TEST(MpiCommunicator, AllreduceMeanEqualsTheMeanByHand) {
  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  std::vector<torch::Tensor> t = mixed_tensors(comm.rank());
  std::vector<const void*> storage;
  for (auto& x : t) storage.push_back(x.data_ptr());
  comm.allreduce_mean(t);
  expect_hand_means(t, comm.size());
  for (size_t k = 0; k < t.size(); ++k) EXPECT_EQ(t[k].data_ptr(), storage[k]) << "in place";
  EXPECT_EQ(t[4].scalar_type(), torch::kDouble);
}

TEST(MpiCommunicator, OneAllreducePerBucket) {
  // Default 25 MiB buckets over f32 f32 f32 f32 | f64 | f32: a dtype change splits,
  // so 3 buckets and 3 calls (not 6, one per tensor).
  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  std::vector<torch::Tensor> t = mixed_tensors(comm.rank());
  comm.allreduce_mean(t);
  EXPECT_EQ(comm.allreduce_calls(), 3);
  // 32-byte buckets: [3,4] (48 B) alone; [5] (20 B) + [] (4 B) = 24 B; [2,3,2] (48 B) alone;
  // [2] f64 (16 B); [7] (28 B): 5 buckets.
  egm::MpiCommunicator small(MPI_COMM_WORLD, /*bucket_bytes=*/32);
  std::vector<torch::Tensor> u = mixed_tensors(small.rank());
  small.allreduce_mean(u);
  EXPECT_EQ(small.allreduce_calls(), 5);
  expect_hand_means(u, small.size());
}

TEST(MpiCommunicator, BroadcastCopiesTheRootsTensorOfAnyDtypeAndLayout) {
  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  const int root = comm.size() - 1;
  torch::Tensor ints = torch::full({4}, static_cast<int64_t>(comm.rank()), torch::kLong);
  comm.broadcast(ints, root);
  EXPECT_TRUE(torch::equal(ints, torch::full({4}, static_cast<int64_t>(root), torch::kLong)));

  // A transposed (non-contiguous) view: the base changes in place.
  torch::Tensor base = torch::arange(6, torch::kFloat).view({2, 3}) + 10.0f * static_cast<float>(comm.rank());
  torch::Tensor view = base.t();
  comm.broadcast(view, 0);
  EXPECT_TRUE(torch::equal(base, torch::arange(6, torch::kFloat).view({2, 3})));
}

TEST(MpiCommunicator, BarrierWaitsForTheSlowestRank) {
  // Rank 0 arrives late; no rank may leave the barrier before rank 0 entered it.
  // Checked by order, not by how long the others waited (a loaded machine may
  // deschedule any rank at any time): the ranks share one host under this
  // test's mpirun, hence one CLOCK_MONOTONIC (steady_clock on Linux).
  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  auto now_ns = [] {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count());
  };
  comm.barrier();  // start together
  int64_t entered = 0;
  if (comm.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (comm.rank() == 0) entered = now_ns();
  comm.barrier();
  const int64_t left = now_ns();
  MPI_Bcast(&entered, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  EXPECT_GE(left, entered) << "rank " << comm.rank() << " left the barrier " << (entered - left) / 1e6
                           << " ms before rank 0 entered it";
}

TEST(MpiCommunicator, WorksOnAGroupCommunicatorWithItsOwnRankOrder) {
  // The sweep builds a run's communicator with MPI_Comm_create_group; here the
  // group holds the world ranks in reverse, so group rank = size - 1 - world rank.
  const int n = world_size();
  MPI_Group world_group, reversed;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> order;
  for (int r = n - 1; r >= 0; --r) order.push_back(r);
  MPI_Group_incl(world_group, n, order.data(), &reversed);
  MPI_Comm group_comm = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_create_group(MPI_COMM_WORLD, reversed, /*tag=*/7, &group_comm), MPI_SUCCESS);
  {
    egm::MpiCommunicator comm(group_comm);
    EXPECT_EQ(comm.rank(), n - 1 - world_rank());
    torch::Tensor t = torch::full({3}, static_cast<double>(world_rank()), torch::kDouble);
    comm.broadcast(t, /*root=*/0);  // group rank 0 is world rank n-1
    EXPECT_TRUE(torch::equal(t, torch::full({3}, static_cast<double>(n - 1), torch::kDouble)));
    std::vector<torch::Tensor> v{torch::full({2}, static_cast<double>(world_rank()), torch::kDouble)};
    comm.allreduce_mean(v);
    EXPECT_EQ(v[0][0].item<double>(), (n - 1) / 2.0);  // mean of 0..n-1
  }
  MPI_Comm_free(&group_comm);
  MPI_Group_free(&reversed);
  MPI_Group_free(&world_group);
}

TEST(MpiCommunicator, UnsupportedInputIsAnErrorOnEveryRankBeforeAnyCall) {
  egm::MpiCommunicator comm(MPI_COMM_WORLD);
  std::vector<torch::Tensor> ints{torch::zeros({2}, torch::kLong)};
  EXPECT_THROW(comm.allreduce_mean(ints), egm::Error);
  torch::Tensor t = torch::zeros({2});
  EXPECT_THROW(comm.broadcast(t, comm.size()), egm::Error);
  EXPECT_THROW(comm.broadcast(t, -1), egm::Error);
  EXPECT_EQ(comm.allreduce_calls(), 0);
  comm.barrier();  // everyone is still in step
}

TEST(MpiComm, OwnsADuplicateThatReturnsErrorsAndFreesItself) {
  egm::mpi::Comm comm = egm::mpi::Comm::duplicate(MPI_COMM_WORLD);
  ASSERT_NE(comm.get(), MPI_COMM_NULL);
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(comm.get(), MPI_COMM_WORLD, &same);
  EXPECT_EQ(same, MPI_CONGRUENT) << "a duplicate: the same ranks, its own message matching";
  EXPECT_EQ(comm.rank(), world_rank());
  EXPECT_EQ(comm.size(), world_size());
  int value = 0;
  EXPECT_THROW(EGM_MPI_CHECK(MPI_Bcast(&value, 1, MPI_INT, /*root=*/world_size() + 5, comm.get())), egm::Error)
      << "MPI_ERRORS_RETURN: the error reaches the check instead of aborting the job";
  egm::mpi::Comm moved = std::move(comm);
  EXPECT_EQ(comm.get(), MPI_COMM_NULL);
  EXPECT_EQ(moved.size(), world_size());
  EXPECT_EQ(egm::mpi::Comm::adopt(MPI_COMM_NULL).get(), MPI_COMM_NULL);
}

TEST(MpiCheck, AFailingCallReportsMpisTextFileLineHostAndRank) {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int value = 0;
  int line = 0;
  try {
    line = __LINE__ + 1;
    EGM_MPI_CHECK(MPI_Bcast(&value, 1, MPI_INT, /*root=*/world_size() + 5, dup));
    ADD_FAILURE() << "an invalid root was accepted";
  } catch (const egm::Error& e) {
    const std::string message = e.what(), where = e.where();
    EXPECT_NE(message.find("MPI_Bcast("), std::string::npos) << message;
    // MPI's own text for the invalid-root class, asked of MPI independently.
    EXPECT_NE(message.find(egm::mpi::error_string(MPI_ERR_ROOT)), std::string::npos) << message;
    EXPECT_NE(where.find("tests/dist/test_mpi_communicator.cpp:" + std::to_string(line)), std::string::npos) << where;
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    EXPECT_NE(where.find(host), std::string::npos) << where;
    EXPECT_NE(where.find("(rank " + std::to_string(world_rank()) + ")"), std::string::npos) << where;
  }
  MPI_Comm_free(&dup);
}

TEST(MakeCommunicator, CpuDevicesGetMpi) {
  auto comm = egm::make_communicator(MPI_COMM_WORLD, torch::Device(torch::kCPU));
  EXPECT_EQ(comm->backend(), egm::Backend::mpi);
  EXPECT_EQ(comm->size(), world_size());
  // The one rule, as workers and the coordinator apply it.
  const egm::DeviceName cpu, cuda{egm::DeviceName::Kind::cuda, 0};
  EXPECT_EQ(egm::backend_for(cpu, 2, true), egm::Backend::mpi);
  EXPECT_EQ(egm::backend_for(cuda, 2, true), egm::Backend::nccl);
  EXPECT_EQ(egm::backend_for(cuda, 2, false), egm::Backend::mpi);
  EXPECT_EQ(egm::backend_for(cuda, 1, true), egm::Backend::none);
}

TEST(Placement, LocalRankUnderMpirunOnOneNode) {
  // One node: the node-local rank is the world rank, and Open MPI's mpirun
  // says so too (OMPI_COMM_WORLD_LOCAL_RANK), which local_rank() prefers.
  EXPECT_EQ(egm::dist::node_local_rank(MPI_COMM_WORLD), world_rank());
  egm::LocalRank local = egm::dist::local_rank(MPI_COMM_WORLD);
  EXPECT_EQ(local.rank, world_rank());
  if (std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) {
    EXPECT_EQ(local.source, "OMPI_COMM_WORLD_LOCAL_RANK");
  }
}

}  // namespace
