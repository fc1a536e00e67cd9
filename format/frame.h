// The byte layout of an iotape file: a file magic, then frames, then an
// optional tail pointing at the index frame. Every frame carries the CRC-32 of
// its 20-byte header and of its payload, so damage is found before decoding.
// docs/format.md describes the same layout for other implementations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace iotape::format::frame {

inline constexpr char kFileMagic[8] = {'\x89', 'I', 'O', 'T', 'A', 'P', 'E', '\n'};
inline constexpr uint32_t kFrameMagic = 0x46544f49;  // "IOTF" little-endian
inline constexpr char kTailMagic[8] = {'I', 'O', 'T', 'A', 'P', 'E', 'I', 'X'};
inline constexpr size_t kHeaderSize = 24;
inline constexpr size_t kTailSize = 16;
// No frame is larger; a length above this is damage, not a request to allocate.
inline constexpr uint32_t kMaxPayload = 256u << 20;

enum class Kind : uint8_t { kHeader = 1, kChunk = 2, kIndex = 3 };
enum class Codec : uint8_t { kRaw = 0, kZstd = 1 };

struct FrameHeader {
  Kind kind;
  Codec codec;
  uint32_t stored_len;  // bytes following the frame header
  uint32_t raw_len;     // bytes after decompression
  uint32_t payload_crc;
};

// Serialises a frame header (computing its own CRC) into `out` (kHeaderSize bytes).
void encode_header(const FrameHeader& h, char* out);
// Parses and verifies a frame header; nullopt with `why` set if it is not one.
std::optional<FrameHeader> decode_header(const char* in, std::string* why);

void encode_tail(uint64_t index_offset, char* out);
std::optional<uint64_t> decode_tail(const char* in);

uint32_t crc32(std::string_view data);

// zstd helpers; decompress returns false (with `why`) on any failure.
std::string compress(std::string_view raw, int level);
// The same into *out, reusing its storage: a writer compressing chunk after
// chunk then touches no fresh memory (page faults were a quarter of a
// recorder's CPU).
void compress(std::string_view raw, int level, std::string* out);
bool decompress(std::string_view stored, uint32_t raw_len, std::string* out, std::string* why);

}  // namespace iotape::format::frame
