// Compressed inputs read as plain bytes. gzip, bzip2, xz and zstd data are
// recognised by their magic bytes (never by file name) and decompressed while
// they are read, in constant memory; anything else passes through unchanged.
// Concatenated streams (pigz, pbzip2, `cat a.gz b.gz`) read as one.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace iotape::convert {

enum class Compression { kNone, kGzip, kBzip2, kXz, kZstd };

std::string_view compression_name(Compression c);  // "none", "gzip", "bzip2", "xz", "zstd"

// The compression whose magic `head` starts with (kNone if none; needs up to 6 bytes).
Compression detect_compression(std::string_view head);

// A streambuf over `source` (not owned) that decompresses what it reads.
// Corrupt or truncated compressed data throws TraceError "NAME: byte N: why",
// N counting compressed bytes. `on_read`, if set, is called with the number of
// source bytes consumed so far after every read from the source.
class DecompressingStreambuf : public std::streambuf {
 public:
  DecompressingStreambuf(std::streambuf* source, std::string name,
                         std::function<void(uint64_t)> on_read = {});
  ~DecompressingStreambuf() override;

  Compression compression() const { return compression_; }

  class Decoder;  // one codec, behind the streambuf

 protected:
  int_type underflow() override;

 private:
  // Refills the compressed input buffer; false at the end of the source.
  bool fill_input();

  std::streambuf* source_;
  std::string name_;
  std::function<void(uint64_t)> on_read_;
  Compression compression_ = Compression::kNone;
  std::unique_ptr<Decoder> decoder_;
  std::vector<char> in_;   // compressed bytes [in_at_, in_end_)
  size_t in_at_ = 0, in_end_ = 0;
  bool source_done_ = false;
  bool stream_ended_ = false;  // the decoder finished a stream; more input starts another
  uint64_t consumed_ = 0;  // source bytes read
  std::vector<char> out_;  // decompressed bytes: the get area
};

// An istream reading through a DecompressingStreambuf; decompression errors
// propagate as TraceError from every read.
class DecompressingStream : public std::istream {
 public:
  DecompressingStream(std::streambuf* source, std::string name, std::function<void(uint64_t)> on_read = {});
  Compression compression() const { return buf_.compression(); }

 private:
  DecompressingStreambuf buf_;
};

}  // namespace iotape::convert
