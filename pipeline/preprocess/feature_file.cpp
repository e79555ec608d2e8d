#include "pipeline/preprocess/feature_file.h"

#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "common/error.h"
#include "common/files.h"

namespace tpuperf {

namespace {

void check(herr_t rc, const std::string& path, const std::string& what) {
  if (rc < 0) throw Error("HDF5 failed to " + what, path);
}

template <typename T>
void write_1d(hid_t file, const std::string& path, const char* name, hid_t type, const std::vector<T>& v) {
  hsize_t dims[1] = {v.size()};
  hid_t space = H5Screate_simple(1, dims, nullptr);
  hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = ds < 0 ? -1 : (v.empty() ? 0 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  check(rc, path, std::string("write dataset ") + name);
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
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) throw Error("cannot create feature file", tmp);
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
    std::remove(tmp.c_str());
    throw Error("cannot write feature file (disk full?)", tmp);
  }
  rename_durable(tmp, path);
}

FeatureStats read_feature_stats(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) throw Error("cannot open feature file", path);
  hid_t ds = H5Dopen2(file, "stats_flat", H5P_DEFAULT);
  std::vector<double> flat;
  herr_t rc = -1;
  if (ds >= 0) {
    hid_t space = H5Dget_space(ds);
    hssize_t n = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    if (n == FeatureStats::kFlatSize) {
      flat.resize(static_cast<size_t>(n));
      rc = H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat.data());
    }
    H5Dclose(ds);
  }
  H5Fclose(file);
  if (rc < 0) throw Error("missing or malformed statistics", path, "stats_flat");
  return FeatureStats::from_flat(flat);
}

}  // namespace tpuperf
