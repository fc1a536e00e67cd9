#include "convert/import/importer.h"

#include "convert/import/alibaba.h"
#include "convert/import/blkparse.h"
#include "convert/import/blktrace.h"
#include "convert/import/disksim.h"
#include "convert/import/fio_iolog.h"
#include "convert/import/input.h"
#include "convert/import/iotape_csv.h"
#include "convert/import/jsonl.h"
#include "convert/import/msr.h"
#include "convert/import/spc.h"
#include "convert/import/systor.h"
#include "convert/import/tencent.h"
#include "convert/import/vscsi.h"
#include "format/error.h"

namespace iotape::convert {

namespace {

// These formats have no volume ids to filter by (or name devices themselves).
void refuse_volumes(const blockevents::ImportOptions& options) {
  if (!options.volumes.empty()) throw format::UsageError("this import format does not filter volumes (--volume)");
}

// The registry's entry point for an importer over streams.
template <StreamImporter import>
blockevents::ImportReport import_paths(const std::vector<std::string>& paths, const blockevents::ImportOptions& options,
                                       format::TraceWriter& out) {
  refuse_volumes(options);
  return import_files(paths, out, import);
}

// The same for one that sorts, and so takes the sorting options.
template <OptionsStreamImporter import>
blockevents::ImportReport import_paths_sorting(const std::vector<std::string>& paths,
                                               const blockevents::ImportOptions& options, format::TraceWriter& out) {
  refuse_volumes(options);
  return import_files(paths, options, out, import);
}

template <OptionsStreamImporter import>
blockevents::ImportReport import_paths_with(const std::vector<std::string>& paths,
                                            const blockevents::ImportOptions& options, format::TraceWriter& out) {
  return import_files(paths, options, out, import);
}

constexpr Importer kImporters[] = {
    {"blktrace", "raw blktrace binary: every PREFIX.blktrace.N of one run, or a blkparse -d dump",
     v1::CLOCK_DOMAIN_RELATIVE, import_paths<import_blktrace>},
    {"msr", "MSR Cambridge CSV (SNIA IOTTA): FILETIME,host,disk,Read|Write,offset,size,response",
     v1::CLOCK_DOMAIN_REALTIME, import_paths<import_msr>},
    {"vscsi", "VMware/CloudPhysics vscsi binary records, v1 or v2", v1::CLOCK_DOMAIN_RELATIVE,
     import_paths<import_vscsi>},
    {"blkparse", "blkparse's default text output of a blktrace run (summary and messages allowed)",
     v1::CLOCK_DOMAIN_RELATIVE, import_paths_sorting<import_blkparse>},
    {"fio-iolog", "fio iolog v2 or v3 (--write_iolog); every file becomes a device", v1::CLOCK_DOMAIN_RELATIVE,
     import_paths_with<import_fio_iolog>, true},
    {"systor", "SNIA SYSTOR'17 CSV: Timestamp,Response,IOType,LUN,Offset,Size (unsorted)",
     v1::CLOCK_DOMAIN_REALTIME, import_paths_with<import_systor>, true},
    {"tencent", "Tencent CBS CSV: Timestamp,Offset,Size,IOType,VolumeID (sectors; unsorted)",
     v1::CLOCK_DOMAIN_REALTIME, import_paths_with<import_tencent>, true},
    {"alibaba", "Alibaba 2020 CSV: device_id,opcode,offset,length,timestamp (us)", v1::CLOCK_DOMAIN_REALTIME,
     import_paths_with<import_alibaba>, true},
    {"spc", "SPC CSV: ASU,LBA,Size,Opcode,Timestamp (UMass Financial, WebSearch)", v1::CLOCK_DOMAIN_RELATIVE,
     import_paths_with<import_spc>, true},
    {"disksim", "DiskSim/MQSim ASCII: time_ms devno blkno blocks flags", v1::CLOCK_DOMAIN_RELATIVE,
     import_paths_with<import_disksim>, true},
    {"csv", "iotape's own CSV (iotape export csv, iotape cat --format csv)", v1::CLOCK_DOMAIN_RELATIVE,
     import_paths_with<import_iotape_csv>, true},
    {"jsonl", "iotape's own JSON lines (iotape export jsonl, iotape cat --format jsonl)",
     v1::CLOCK_DOMAIN_RELATIVE, import_paths_with<import_jsonl>, true},
};
}  // namespace

std::span<const Importer> importers() { return kImporters; }

const Importer* find_importer(std::string_view name) {
  for (const Importer& i : importers())
    if (i.name == name) return &i;
  return nullptr;
}

}  // namespace iotape::convert
