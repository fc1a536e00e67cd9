// The individual exporters; see exporter.h for the contract and registry.cc
// for their names.
#pragma once

#include <cstdio>

#include "convert/export/exporter.h"

namespace iotape {

ExportReport export_fio_iolog(TraceReader& in, std::FILE* out);
ExportReport export_blktrace(TraceReader& in, std::FILE* out);
ExportReport export_blkparse(TraceReader& in, std::FILE* out);
ExportReport export_csv(TraceReader& in, std::FILE* out);
ExportReport export_jsonl(TraceReader& in, std::FILE* out);

}  // namespace iotape
