#include "traces/import/importer.h"

#include "traces/import/blktrace.h"
#include "traces/import/input.h"
#include "traces/import/msr.h"
#include "traces/import/vscsi.h"

namespace iotape {

namespace {

// The registry's entry point for an importer over streams.
template <StreamImporter import>
ImportReport import_paths(const std::vector<std::string>& paths, TraceWriter& out) {
  return import_files(paths, out, import);
}

constexpr Importer kImporters[] = {
    {"blktrace", "raw blktrace binary: every PREFIX.blktrace.N of one run, or a blkparse -d dump",
     v1::CLOCK_DOMAIN_RELATIVE, import_paths<import_blktrace>},
    {"msr", "MSR Cambridge CSV (SNIA IOTTA): FILETIME,host,disk,Read|Write,offset,size,response",
     v1::CLOCK_DOMAIN_REALTIME, import_paths<import_msr>},
    {"vscsi", "VMware/CloudPhysics vscsi binary records, v1 or v2", v1::CLOCK_DOMAIN_RELATIVE,
     import_paths<import_vscsi>},
};
}  // namespace

std::span<const Importer> importers() { return kImporters; }

const Importer* find_importer(std::string_view name) {
  for (const Importer& i : importers())
    if (i.name == name) return &i;
  return nullptr;
}

}  // namespace iotape
