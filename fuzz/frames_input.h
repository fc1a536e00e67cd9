// The frames input of fuzz_reader: a fuzz input that lists frames, each
//   [flags u8][length u16 LE][raw payload]
// flags & 3: frame kind (0 = no frame, the payload is copied as raw bytes),
// flags & 4: store zstd-compressed, flags & 8: follow with a tail pointing at
// this frame. Frames are built with correct checksums, so mutations reach
// the protobuf and chunk decoders instead of stopping at a CRC.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "format/frame.h"

namespace iotape::fuzz {

inline std::string file_from_frames(std::span<const uint8_t> in) {
  std::string out(format::frame::kFileMagic, sizeof format::frame::kFileMagic);
  size_t p = 0;
  while (p + 3 <= in.size()) {
    const uint8_t flags = in[p];
    size_t len = in[p + 1] | in[p + 2] << 8;
    p += 3;
    len = std::min(len, in.size() - p);
    const std::string_view raw(reinterpret_cast<const char*>(in.data()) + p, len);
    p += len;
    const int kind = flags & 3;
    if (kind == 0) {
      out += raw;
      continue;
    }
    const bool zstd = flags & 4;
    const std::string stored = zstd ? format::frame::compress(raw, 1) : std::string(raw);
    const uint64_t at = out.size();
    char h[format::frame::kHeaderSize];
    format::frame::encode_header(
        {static_cast<format::frame::Kind>(kind), zstd ? format::frame::Codec::kZstd : format::frame::Codec::kRaw,
         static_cast<uint32_t>(stored.size()), static_cast<uint32_t>(raw.size()), format::frame::crc32(stored)},
        h);
    out.append(h, sizeof h);
    out += stored;
    if (flags & 8) {
      char t[format::frame::kTailSize];
      format::frame::encode_tail(at, t);
      out.append(t, sizeof t);
    }
  }
  return out;
}

// The frames input that builds `file` again (for seeds): its frames decoded.
inline std::string frames_from_file(std::string_view file) {
  std::string out;
  size_t p = sizeof format::frame::kFileMagic;
  while (p + format::frame::kHeaderSize <= file.size()) {
    std::string why, raw;
    auto h = format::frame::decode_header(file.data() + p, &why);
    if (!h || p + format::frame::kHeaderSize + h->stored_len > file.size()) break;
    const std::string_view stored = file.substr(p + format::frame::kHeaderSize, h->stored_len);
    if (h->codec == format::frame::Codec::kZstd) {
      if (!format::frame::decompress(stored, h->raw_len, &raw, &why)) break;
    } else {
      raw = stored;
    }
    p += format::frame::kHeaderSize + h->stored_len;
    const bool tail = h->kind == format::frame::Kind::kIndex && p + format::frame::kTailSize <= file.size();
    const int flags = static_cast<int>(h->kind) | (h->codec == format::frame::Codec::kZstd ? 4 : 0) | (tail ? 8 : 0);
    out += static_cast<char>(flags);
    out += static_cast<char>(raw.size() & 0xff);
    out += static_cast<char>(raw.size() >> 8);
    out += raw;
    if (tail) p += format::frame::kTailSize;
  }
  return out;
}

}  // namespace iotape::fuzz
