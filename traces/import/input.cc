#include "traces/import/input.h"

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "traces/error.h"

namespace iotape {
namespace {

// A file opened for importing, with a larger read buffer than the default.
struct InputFile {
  explicit InputFile(const std::string& path) : buffer(1 << 20) {
    // libstdc++ only honours a buffer set before open().
    stream.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    stream.open(path, std::ios::binary);
    if (!stream) throw error_errno(path, "cannot open input", errno);
  }
  std::vector<char> buffer;
  std::ifstream stream;
};

}  // namespace

ImportReport import_files(const std::vector<std::string>& paths, TraceWriter& out, StreamImporter import) {
  std::vector<std::unique_ptr<InputFile>> files;
  std::vector<Input> inputs;
  for (const auto& path : paths) {
    files.push_back(std::make_unique<InputFile>(path));
    inputs.push_back({path, &files.back()->stream});
  }
  return import(inputs, out);
}

size_t read_bytes(std::istream& in, char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const std::streamsize got = in.rdbuf()->sgetn(out + done, static_cast<std::streamsize>(n - done));
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

std::string file_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace iotape
