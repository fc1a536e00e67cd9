// Inputs of an import: files opened as buffered streams, plus the helpers the
// importers share for reading them. Importers take streams, so they run the
// same on files and on bytes in memory.
#pragma once

#include <cstddef>
#include <istream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "convert/import/importer.h"

namespace iotape::convert {

// One input of an import: its stream and the name errors cite. Files are read
// through a DecompressingStream: gzip, bzip2, xz and zstd inputs import as if
// plain.
struct Input {
  std::string name;
  std::istream* stream = nullptr;
};

// An importer over streams, e.g. import_msr.
using StreamImporter = blockevents::ImportReport (*)(std::span<const Input> inputs, format::TraceWriter& out);
// One that takes options (volume filter, sorting), e.g. import_systor.
using OptionsStreamImporter = blockevents::ImportReport (*)(std::span<const Input> inputs,
                                                            const blockevents::ImportOptions& options,
                                                            format::TraceWriter& out);

// Opens every path (TraceError if one cannot be) and runs `import` on them.
// A progress line goes to stderr while large inputs are read, if it is a terminal.
blockevents::ImportReport import_files(const std::vector<std::string>& paths, format::TraceWriter& out,
                                       StreamImporter import);
blockevents::ImportReport import_files(const std::vector<std::string>& paths, const blockevents::ImportOptions& options,
                                       format::TraceWriter& out, OptionsStreamImporter import);

// Reads up to n bytes; returns how many were read (fewer only at the end).
size_t read_bytes(std::istream& in, char* out, size_t n);

// "dir/cloudphysics.vscsi" -> "cloudphysics"
std::string file_stem(const std::string& path);

}  // namespace iotape::convert
