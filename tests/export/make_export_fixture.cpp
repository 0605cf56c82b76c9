// Writes the export and notebook tests' database (export_fixture.h).
//   make_export_fixture DB_PATH
#include <cstdio>

#include "export_fixture.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DB_PATH\n", argv[0]);
    return 2;
  }
  egm::testing::write_export_fixture(argv[1]);
  return 0;
}
