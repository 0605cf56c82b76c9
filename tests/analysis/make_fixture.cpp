// Writes the analysis fixture databases the CLI test reads:
//   DIR/main.sqlite   sweep "fixture" (4 variants x 3 seeds, fixture.h) and
//                     sweep "one_seed" (the same on seed 0 only)
//   DIR/mixed.sqlite  sweep "fixture" with ega-s1 run on 2 ranks (mpi)
#include <cstdio>
#include <filesystem>
#include <string>

#include "fixture.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  using namespace egm;
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  for (const char* f : {"main.sqlite", "mixed.sqlite"}) std::filesystem::remove(dir + "/" + f);
  {
    db::ResultsDb db(dir + "/main.sqlite", db::OpenMode::read_write_create);
    testing::write_fixture(db);
    testing::FixtureOptions one;
    one.name = "one_seed";
    one.seeds = {0};
    testing::write_fixture(db, one);
  }
  {
    db::ResultsDb db(dir + "/mixed.sqlite", db::OpenMode::read_write_create);
    testing::write_fixture(db, testing::mixed_world_size_options());
  }
  return 0;
}
