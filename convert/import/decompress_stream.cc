#include "convert/import/decompress_stream.h"

#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "format/error.h"

namespace iotape::convert {
namespace {

constexpr size_t kInputBuffer = 1 << 18;
constexpr size_t kOutputBuffer = 1 << 18;

// What one decoding step did.
struct Step {
  size_t consumed = 0;
  size_t produced = 0;
  bool end = false;           // a whole compressed stream ended here
  std::string error;          // non-empty: the data is corrupt
};

}  // namespace

// One codec: decodes from an input range into an output range.
class DecompressingStreambuf::Decoder {
 public:
  virtual ~Decoder() = default;
  // `input_ended`: no bytes follow those given.
  virtual Step decode(const char* in, size_t in_len, char* out, size_t out_cap, bool input_ended) = 0;
  // Prepares for another stream after one ended (concatenated files).
  virtual void restart() {}
};

namespace {

class GzipDecoder : public DecompressingStreambuf::Decoder {
 public:
  GzipDecoder() {
    if (inflateInit2(&z_, 15 + 32) != Z_OK) throw format::TraceError("zlib: out of memory");  // 32: gzip or zlib header
  }
  ~GzipDecoder() override { inflateEnd(&z_); }
  Step decode(const char* in, size_t in_len, char* out, size_t out_cap, bool) override {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in));
    z_.avail_in = static_cast<uInt>(std::min<size_t>(in_len, UINT32_MAX));
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(out_cap);
    const int r = inflate(&z_, Z_NO_FLUSH);
    Step s{.consumed = in_len - z_.avail_in, .produced = out_cap - z_.avail_out, .end = false, .error = {}};
    if (r == Z_STREAM_END)
      s.end = true;
    else if (r != Z_OK && r != Z_BUF_ERROR)
      s.error = z_.msg ? z_.msg : "corrupt gzip data";
    return s;
  }
  void restart() override { inflateReset(&z_); }

 private:
  z_stream z_{};
};

class Bzip2Decoder : public DecompressingStreambuf::Decoder {
 public:
  Bzip2Decoder() { init(); }
  ~Bzip2Decoder() override { BZ2_bzDecompressEnd(&b_); }
  Step decode(const char* in, size_t in_len, char* out, size_t out_cap, bool) override {
    b_.next_in = const_cast<char*>(in);
    b_.avail_in = static_cast<unsigned>(std::min<size_t>(in_len, UINT32_MAX));
    b_.next_out = out;
    b_.avail_out = static_cast<unsigned>(out_cap);
    const int r = BZ2_bzDecompress(&b_);
    Step s{.consumed = in_len - b_.avail_in, .produced = out_cap - b_.avail_out, .end = false, .error = {}};
    if (r == BZ_STREAM_END)
      s.end = true;
    else if (r != BZ_OK)
      s.error = "corrupt bzip2 data (error " + std::to_string(r) + ")";
    return s;
  }
  void restart() override {
    BZ2_bzDecompressEnd(&b_);
    init();
  }

 private:
  void init() {
    b_ = {};
    if (BZ2_bzDecompressInit(&b_, 0, 0) != BZ_OK) throw format::TraceError("bzip2: out of memory");
  }
  bz_stream b_{};
};

class XzDecoder : public DecompressingStreambuf::Decoder {
 public:
  XzDecoder() {
    if (lzma_stream_decoder(&x_, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
      throw format::TraceError("xz: out of memory");
  }
  ~XzDecoder() override { lzma_end(&x_); }
  Step decode(const char* in, size_t in_len, char* out, size_t out_cap, bool input_ended) override {
    x_.next_in = reinterpret_cast<const uint8_t*>(in);
    x_.avail_in = in_len;
    x_.next_out = reinterpret_cast<uint8_t*>(out);
    x_.avail_out = out_cap;
    const lzma_ret r = lzma_code(&x_, input_ended ? LZMA_FINISH : LZMA_RUN);
    Step s{.consumed = in_len - x_.avail_in, .produced = out_cap - x_.avail_out, .end = false, .error = {}};
    if (r == LZMA_STREAM_END)
      s.end = true;
    else if (r != LZMA_OK && r != LZMA_BUF_ERROR)
      s.error = "corrupt xz data (error " + std::to_string(static_cast<int>(r)) + ")";
    return s;
  }

 private:
  lzma_stream x_ = LZMA_STREAM_INIT;
};

class ZstdDecoder : public DecompressingStreambuf::Decoder {
 public:
  ZstdDecoder() : d_(ZSTD_createDStream()) {
    if (!d_) throw format::TraceError("zstd: out of memory");
  }
  ~ZstdDecoder() override { ZSTD_freeDStream(d_); }
  Step decode(const char* in, size_t in_len, char* out, size_t out_cap, bool) override {
    ZSTD_inBuffer i{in, in_len, 0};
    ZSTD_outBuffer o{out, out_cap, 0};
    const size_t r = ZSTD_decompressStream(d_, &o, &i);
    Step s{.consumed = i.pos, .produced = o.pos, .end = false, .error = {}};
    if (ZSTD_isError(r))
      s.error = std::string("corrupt zstd data: ") + ZSTD_getErrorName(r);
    else
      s.end = r == 0;  // a frame is complete and flushed
    return s;
  }

 private:
  ZSTD_DStream* d_;
};

}  // namespace

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::kGzip: return "gzip";
    case Compression::kBzip2: return "bzip2";
    case Compression::kXz: return "xz";
    case Compression::kZstd: return "zstd";
    case Compression::kNone: break;
  }
  return "none";
}

Compression detect_compression(std::string_view head) {
  auto starts = [head](std::string_view magic) { return head.substr(0, magic.size()) == magic; };
  if (starts("\x1f\x8b")) return Compression::kGzip;
  if (starts("BZh") && head.size() >= 4 && head[3] >= '1' && head[3] <= '9') return Compression::kBzip2;
  if (starts(std::string_view("\xfd" "7zXZ\0", 6))) return Compression::kXz;
  if (starts("\x28\xb5\x2f\xfd")) return Compression::kZstd;
  return Compression::kNone;
}

DecompressingStreambuf::DecompressingStreambuf(std::streambuf* source, std::string name,
                                               std::function<void(uint64_t)> on_read)
    : source_(source), name_(std::move(name)), on_read_(std::move(on_read)), in_(kInputBuffer) {
  // The magic needs the first few bytes; a short read is not the end of a pipe.
  while (in_end_ < 6 && fill_input()) {
  }
  compression_ = detect_compression({in_.data(), in_end_});
  switch (compression_) {
    case Compression::kNone: return;
    case Compression::kGzip: decoder_ = std::make_unique<GzipDecoder>(); break;
    case Compression::kBzip2: decoder_ = std::make_unique<Bzip2Decoder>(); break;
    case Compression::kXz: decoder_ = std::make_unique<XzDecoder>(); break;
    case Compression::kZstd: decoder_ = std::make_unique<ZstdDecoder>(); break;
  }
  out_.resize(kOutputBuffer);
}

DecompressingStreambuf::~DecompressingStreambuf() = default;

bool DecompressingStreambuf::fill_input() {
  if (source_done_) return false;
  if (in_at_ == in_end_) in_at_ = in_end_ = 0;
  const std::streamsize got =
      source_->sgetn(in_.data() + in_end_, static_cast<std::streamsize>(in_.size() - in_end_));
  if (got <= 0) {
    source_done_ = true;
    return false;
  }
  in_end_ += static_cast<size_t>(got);
  consumed_ += static_cast<uint64_t>(got);
  if (on_read_) on_read_(consumed_);
  return true;
}

DecompressingStreambuf::int_type DecompressingStreambuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (compression_ == Compression::kNone) {
    // Plain input: hand out the input buffer itself.
    if (in_at_ == in_end_ && !fill_input()) return traits_type::eof();
    setg(in_.data() + in_at_, in_.data() + in_at_, in_.data() + in_end_);
    in_at_ = in_end_;
    return traits_type::to_int_type(*gptr());
  }
  for (;;) {
    if (in_at_ == in_end_) fill_input();
    const bool input_ended = source_done_ && in_at_ == in_end_;
    if (stream_ended_) {
      if (input_ended) return traits_type::eof();
      decoder_->restart();  // another compressed stream follows
      stream_ended_ = false;
    }
    const Step s = decoder_->decode(in_.data() + in_at_, in_end_ - in_at_, out_.data(), out_.size(), input_ended);
    const uint64_t at = consumed_ - (in_end_ - in_at_);
    in_at_ += s.consumed;
    if (!s.error.empty()) throw format::error_at_byte(name_, at, s.error);
    stream_ended_ = s.end;
    if (s.produced > 0) {
      setg(out_.data(), out_.data(), out_.data() + s.produced);
      return traits_type::to_int_type(*gptr());
    }
    if (s.end) continue;
    if (input_ended)
      throw format::error_at_byte(name_, consumed_,
                                  "truncated " + std::string(compression_name(compression_)) + " data");
    if (s.consumed == 0 && in_at_ < in_end_)
      throw format::error_at_byte(name_, at, "corrupt data: the decoder is stuck");
  }
}

DecompressingStream::DecompressingStream(std::streambuf* source, std::string name,
                                         std::function<void(uint64_t)> on_read)
    : std::istream(nullptr), buf_(source, std::move(name), std::move(on_read)) {
  rdbuf(&buf_);
  exceptions(std::ios::badbit);  // a decompression error is a TraceError, not a silent end
}

}  // namespace iotape::convert
