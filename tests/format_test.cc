#include <catch2/catch.hpp>

#include "traces/reader.h"
#include "traces/writer.h"

using namespace iotape;

TEST_CASE("smoke") {
  v1::TraceHeader h;
  {
    TraceWriter w("/tmp/smoke.iot", h);
    Io io;
    io.issue_ns = 5;
    io.length = 4096;
    io.comm = "fio";
    w.append(io);
    w.close();
  }
  TraceReader r("/tmp/smoke.iot");
  Io io;
  REQUIRE(r.next(io));
  CHECK(io.comm == "fio");
  CHECK(io.issue_ns == 5);
  CHECK(!r.next(io));
}
