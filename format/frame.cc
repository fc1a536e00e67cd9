#include "format/frame.h"

#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <stdexcept>

namespace iotape::format::frame {
namespace {

void put32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }  // the format is little-endian, as is x86
uint32_t get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

uint32_t crc32(std::string_view data) {
  return static_cast<uint32_t>(
      ::crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

void encode_header(const FrameHeader& h, char* out) {
  put32(out, kFrameMagic);
  out[4] = static_cast<char>(h.kind);
  out[5] = static_cast<char>(h.codec);
  out[6] = out[7] = 0;
  put32(out + 8, h.stored_len);
  put32(out + 12, h.raw_len);
  put32(out + 16, h.payload_crc);
  put32(out + 20, crc32({out, 20}));
}

std::optional<FrameHeader> decode_header(const char* in, std::string* why) {
  if (get32(in) != kFrameMagic) {
    *why = "no frame starts here (bad frame magic)";
    return std::nullopt;
  }
  if (get32(in + 20) != crc32({in, 20})) {
    *why = "frame header checksum mismatch";
    return std::nullopt;
  }
  FrameHeader h{static_cast<Kind>(in[4]), static_cast<Codec>(in[5]), get32(in + 8), get32(in + 12),
                get32(in + 16)};
  if (h.kind < Kind::kHeader || h.kind > Kind::kIndex) {
    *why = "unknown frame kind " + std::to_string(static_cast<int>(h.kind));
    return std::nullopt;
  }
  if (h.codec != Codec::kRaw && h.codec != Codec::kZstd) {
    *why = "unknown frame codec " + std::to_string(static_cast<int>(h.codec));
    return std::nullopt;
  }
  if (h.stored_len > kMaxPayload || h.raw_len > kMaxPayload) {
    *why = "frame length " + std::to_string(std::max(h.stored_len, h.raw_len)) + " exceeds the limit";
    return std::nullopt;
  }
  return h;
}

void encode_tail(uint64_t index_offset, char* out) {
  std::memcpy(out, &index_offset, 8);
  std::memcpy(out + 8, kTailMagic, 8);
}

std::optional<uint64_t> decode_tail(const char* in) {
  if (std::memcmp(in + 8, kTailMagic, 8) != 0) return std::nullopt;
  uint64_t off;
  std::memcpy(&off, in, 8);
  return off;
}

std::string compress(std::string_view raw, int level) {
  std::string out;
  compress(raw, level, &out);
  return out;
}

void compress(std::string_view raw, int level, std::string* out) {
  thread_local ZSTD_CCtx* cctx = ZSTD_createCCtx();
  out->resize(ZSTD_compressBound(raw.size()));
  size_t n = ZSTD_compressCCtx(cctx, out->data(), out->size(), raw.data(), raw.size(), level);
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(n));
  out->resize(n);
}

bool decompress(std::string_view stored, uint32_t raw_len, std::string* out, std::string* why) {
  // resize_and_overwrite would avoid zeroing; raw_len is bounded by kMaxPayload.
  out->resize(raw_len);
  thread_local ZSTD_DCtx* dctx = ZSTD_createDCtx();
  size_t n = ZSTD_decompressDCtx(dctx, out->data(), out->size(), stored.data(), stored.size());
  if (ZSTD_isError(n)) {
    *why = std::string("zstd: ") + ZSTD_getErrorName(n);
    return false;
  }
  if (n != raw_len) {
    *why = "decompressed " + std::to_string(n) + " bytes, frame says " + std::to_string(raw_len);
    return false;
  }
  return true;
}

}  // namespace iotape::format::frame
