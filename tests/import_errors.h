// Checks that an importer refuses bad input with an error naming the place.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "convert/import/importer.h"
#include "format/error.h"
#include "format/writer.h"
#include "tests/test_support.h"

namespace iotape::test {

// Importing `bytes` as `format` must throw a TraceError that names the file,
// the place (":LINE: " or ": byte N:") and says `why`.
inline void require_import_error(const std::string& format, const std::string& bytes, const std::string& place,
                                 const std::string& why) {
  TempDir dir;
  const std::string input = dir.file("input");
  write_file(input, bytes);
  const convert::Importer* imp = convert::find_importer(format);
  REQUIRE(imp != nullptr);
  format::TraceWriter w(dir.file("out.iot"), {});
  try {
    imp->run({input}, w);
    FAIL("no error for " << format << " input, expected " << place << " " << why);
  } catch (const format::TraceError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(input + place) != std::string::npos);
    CHECK(msg.find(why) != std::string::npos);
  }
}

}  // namespace iotape::test
