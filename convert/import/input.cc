#include "convert/import/input.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "convert/import/decompress_stream.h"
#include "format/error.h"

namespace iotape::convert {
namespace {

// Inputs smaller than this are read without a progress line.
constexpr uint64_t kProgressMinBytes = 256 << 20;

// "NAME: 42% of 1.2 GB" on stderr, redrawn at most twice a second.
class ProgressLine {
 public:
  ProgressLine(std::string name, uint64_t size) : name_(std::move(name)), size_(size) {}
  ~ProgressLine() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  void update(uint64_t done) {
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\r\033[K%s: %.0f%% of %.1f GB", name_.c_str(), 100.0 * static_cast<double>(done) / static_cast<double>(size_),
                 static_cast<double>(size_) / 1e9);
  }

 private:
  std::string name_;
  uint64_t size_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

// A file opened for importing, decompressed if it is compressed, with a
// larger read buffer than the default.
struct InputFile {
  explicit InputFile(const std::string& path) : buffer(1 << 20) {
    // libstdc++ only honours a buffer set before open().
    file.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    file.open(path, std::ios::binary);
    if (!file) throw format::error_errno(path, "cannot open input", errno);
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    std::function<void(uint64_t)> on_read;
    if (!ec && size >= kProgressMinBytes && ::isatty(STDERR_FILENO)) {
      progress = std::make_unique<ProgressLine>(path, size);
      on_read = [p = progress.get()](uint64_t done) { p->update(done); };
    }
    stream = std::make_unique<DecompressingStream>(file.rdbuf(), path, std::move(on_read));
  }
  std::vector<char> buffer;
  std::ifstream file;
  std::unique_ptr<ProgressLine> progress;
  std::unique_ptr<DecompressingStream> stream;
};

std::vector<Input> open_inputs(const std::vector<std::string>& paths, std::vector<std::unique_ptr<InputFile>>& files) {
  std::vector<Input> inputs;
  for (const auto& path : paths) {
    files.push_back(std::make_unique<InputFile>(path));
    inputs.push_back({path, files.back()->stream.get()});
  }
  return inputs;
}

}  // namespace

blockevents::ImportReport import_files(const std::vector<std::string>& paths, format::TraceWriter& out,
                                       StreamImporter import) {
  std::vector<std::unique_ptr<InputFile>> files;
  return import(open_inputs(paths, files), out);
}

blockevents::ImportReport import_files(const std::vector<std::string>& paths, const blockevents::ImportOptions& options,
                                       format::TraceWriter& out, OptionsStreamImporter import) {
  std::vector<std::unique_ptr<InputFile>> files;
  return import(open_inputs(paths, files), options, out);
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

}  // namespace iotape::convert
