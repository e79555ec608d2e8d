#include "pipeline/preprocess/feature_file.h"

#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/shard.h"

namespace tpuperf {

namespace {

// One chunk with a fletcher32 checksum, as in the shards: a damaged feature file must not
// silently refit a wrong transform. (An empty dataset cannot be chunked; it holds nothing.)
template <typename T>
void write_1d(hid_t file, const std::string& path, const char* name, hid_t type, const std::vector<T>& v) {
  hsize_t dims[1] = {v.size()};
  hid_t space = H5Screate_simple(1, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (!v.empty() && (H5Pset_chunk(dcpl, 1, dims) < 0 || H5Pset_fletcher32(dcpl) < 0)) {
    H5Pclose(dcpl);
    H5Sclose(space);
    throw Error(std::string("HDF5 failed to set up dataset ") + name + hdf5_error_detail(), path);
  }
  hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  herr_t rc = ds < 0 ? -1 : (v.empty() ? 0 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  // Taken now: the next HDF5 call, even a successful close, clears HDF5's error stack.
  std::string detail = rc < 0 ? hdf5_error_detail() : "";
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  if (rc < 0) throw Error(std::string("HDF5 failed to write dataset ") + name + detail, path);
}

void write_attr_int(hid_t file, const char* name, int value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(file, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT, &value);
  H5Aclose(a);
  H5Sclose(space);
}

void write_attr_string(hid_t file, const char* name, const std::string& value) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.empty() ? 1 : value.size());
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, value.empty() ? "" : value.c_str());
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

}  // namespace

void write_feature_file(const std::string& path, const std::string& collection,
                        const FeatureStats& stats, const FeatureTransform& t) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  quiet_hdf5();
  hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) throw Error("cannot create feature file" + hdf5_error_detail(), tmp);
  try {
    write_attr_int(file, "schema_version", kFeatureFileSchemaVersion);
    write_attr_string(file, "collection", collection);
    write_1d(file, tmp, "stats_flat", H5T_NATIVE_DOUBLE, stats.to_flat());
    write_1d(file, tmp, "kept_columns", H5T_NATIVE_INT32, t.kept_columns);
    write_1d(file, tmp, "log1p", H5T_NATIVE_UINT8, t.log1p);
    write_1d(file, tmp, "mean", H5T_NATIVE_DOUBLE, t.mean);
    write_1d(file, tmp, "stddev", H5T_NATIVE_DOUBLE, t.stddev);
  } catch (...) {
    H5Fclose(file);
    std::remove(tmp.c_str());
    throw;
  }
  if (H5Fclose(file) < 0) {
    std::string detail = hdf5_error_detail();
    std::remove(tmp.c_str());
    throw Error("cannot write feature file" + detail, tmp);
  }
  rename_durable(tmp, path);
}

FeatureStats read_feature_stats(const std::string& path) {
  quiet_hdf5();
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) throw Error("cannot open feature file" + hdf5_error_detail(), path);
  hid_t ds = H5Dopen2(file, "stats_flat", H5P_DEFAULT);
  std::vector<double> flat;
  std::string problem;
  if (ds < 0) {
    problem = "missing" + hdf5_error_detail();
  } else {
    hid_t space = H5Dget_space(ds);
    hssize_t n = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    if (n != FeatureStats::kFlatSize) {
      problem = "holds " + std::to_string(n) + " values, expected " + std::to_string(FeatureStats::kFlatSize);
    } else {
      flat.resize(static_cast<size_t>(n));
      if (H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat.data()) < 0)
        problem = "cannot read" + hdf5_error_detail();  // before the closes clear HDF5's error stack
    }
    H5Dclose(ds);
  }
  H5Fclose(file);
  if (!problem.empty()) throw Error("statistics: " + problem, path, "stats_flat");
  return FeatureStats::from_flat(flat);
}

}  // namespace tpuperf
