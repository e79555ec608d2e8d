#include "pipeline/preprocess/feature_file.h"

#include <unistd.h>

#include <cstdio>
#include <vector>

#include "common/base/error.h"
#include "common/base/files.h"
#include "common/shards/hdf5.h"

namespace tpuperf {

namespace {

// One chunk with a fletcher32 checksum, as in the shards: a damaged feature file must not
// silently refit a wrong transform. (An empty dataset cannot be chunked; it holds nothing.)
template <typename T>
void write_1d(hid_t file, const std::string& path, const char* name, const std::vector<T>& v) {
  h5::DatasetLayout l;
  l.dims[0] = l.max_dims[0] = v.size();
  l.chunk[0] = v.size();
  h5::Handle ds = h5::create_dataset(file, name, h5::native_type<T>(), l, path);
  if (!v.empty()) h5::write_rows(ds.get(), h5::native_type<T>(), 1, 0, v.size(), 1, v.data(), path, name);
  ds.close(std::string("dataset '") + name + "'", path, name);
}

void write_contents(hid_t file, const std::string& path, const std::string& collection,
                    const FeatureStats& stats, const FeatureTransform& t) {
  h5::write_attr(file, "schema_version", int32_t{kFeatureFileSchemaVersion}, path);
  h5::write_attr(file, "collection", collection, path);
  write_1d(file, path, "stats_flat", stats.to_flat());
  write_1d(file, path, "kept_columns", t.kept_columns);
  write_1d(file, path, "log1p", t.log1p);
  write_1d(file, path, "mean", t.mean);
  write_1d(file, path, "stddev", t.stddev);
}

}  // namespace

void write_feature_file(const std::string& path, const std::string& collection,
                        const FeatureStats& stats, const FeatureTransform& t) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    h5::Handle file = h5::create_file(tmp);
    write_contents(file.get(), tmp, collection, stats, t);
    file.close("feature file", tmp);
  } catch (Error&) {
    std::remove(tmp.c_str());
    throw;
  }
  rename_durable(tmp, path);
}

FeatureStats read_feature_stats(const std::string& path) {
  h5::Handle file = h5::open_file_readonly(path, "feature file");
  std::vector<double> flat(FeatureStats::kFlatSize);
  try {
    h5::Handle ds = h5::open_dataset(file.get(), "stats_flat", path);
    h5::RowReader rows(ds.get(), H5T_NATIVE_DOUBLE, path, "stats_flat");
    if (rows.rank() != 1 || rows.rows() != flat.size())
      throw Error("holds " + std::to_string(rows.rows() * rows.cols()) + " values, expected " +
                      std::to_string(FeatureStats::kFlatSize),
                  path, "stats_flat");
    rows.read(0, flat.size(), flat.data());
  } catch (Error& e) {
    throw Error("statistics: " + e.reason(), path, "stats_flat");
  }
  file.close("feature file", path);
  return FeatureStats::from_flat(flat);
}

}  // namespace tpuperf
