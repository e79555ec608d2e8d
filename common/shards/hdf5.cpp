#include "common/shards/hdf5.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "common/base/error.h"

namespace tpuperf {

namespace {

// HDF5 reports an OS error with the time, file descriptor and buffer address:
// "file write failed: time = ..., filename = '...', file descriptor = 21, errno = 28,
// error message = 'No space left on device', buf = 0x..., ...". What a user can act on
// is "file write failed: No space left on device"; other messages stay as they are.
std::string condensed(const std::string& msg) {
  const std::string tag = "error message = '";
  size_t at = msg.find(tag);
  if (at == std::string::npos) return msg;
  size_t start = at + tag.size(), end = msg.find('\'', start);
  return msg.substr(0, msg.find(": time = ")) + ": " + msg.substr(start, end - start);
}

herr_t collect_error(unsigned, const H5E_error2_t* e, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(e->desc ? e->desc : "");
  return 0;
}

}  // namespace

// HDF5 prints its error stack to stderr by default; tpuperf reports failures as Errors
// instead. And a file whose H5Fclose failed (a full disk) stays registered
// half-destroyed: HDF5's own atexit clean-up would close it again and crash, turning a
// clear error into a segfault. Every file tpuperf opens is closed explicitly, so that
// clean-up has nothing else to do.
void quiet_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5dont_atexit();  // fails harmlessly if the library is already initialized
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

// The outermost and innermost messages of HDF5's error stack, which then is cleared:
// e.g. "can't read data: data error detected by Fletcher32 checksum". When the innermost
// is an OS error (a full disk), it alone: it is the cause, the outer ones only say which
// HDF5 step failed ("disable slist on flush dest failure failed").
std::string hdf5_error_detail() {
  std::vector<std::string> msgs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &msgs);
  H5Eclear2(H5E_DEFAULT);
  if (msgs.empty()) return "";
  std::string inner = condensed(msgs.back());
  std::string s = msgs.front();
  if (inner != msgs.back()) s = inner;
  else if (msgs.size() > 1 && msgs.back() != msgs.front()) s += ": " + msgs.back();
  std::replace(s.begin(), s.end(), '\n', ' ');  // write errors embed ctime()'s newline
  return " (HDF5: " + s + ")";
}

namespace h5 {

// ------------------------------------------------------------------ handles and checks

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ >= 0 && closer_) closer_(id_);
  id_ = -1;
}

void Handle::close(const std::string& what, const std::string& file, const std::string& key) {
  if (id_ < 0) return;
  const herr_t r = closer_(id_);
  id_ = -1;
  check(r, "cannot close " + what, file, key);
}

hid_t check_id(hid_t id, const std::string& what, const std::string& file, const std::string& key) {
  if (id < 0) throw Error(what + hdf5_error_detail(), file, key);
  return id;
}

void check(herr_t result, const std::string& what, const std::string& file, const std::string& key) {
  if (result < 0) throw Error(what + hdf5_error_detail(), file, key);
}

bool check_tri(htri_t result, const std::string& what, const std::string& file,
               const std::string& key) {
  if (result < 0) throw Error(what + hdf5_error_detail(), file, key);
  return result > 0;
}

template <> hid_t native_type<int32_t>() { return H5T_NATIVE_INT32; }
template <> hid_t native_type<int64_t>() { return H5T_NATIVE_INT64; }
template <> hid_t native_type<uint8_t>() { return H5T_NATIVE_UINT8; }
template <> hid_t native_type<uint64_t>() { return H5T_NATIVE_UINT64; }
template <> hid_t native_type<float>() { return H5T_NATIVE_FLOAT; }
template <> hid_t native_type<double>() { return H5T_NATIVE_DOUBLE; }

// ------------------------------------------------------------------ files

namespace {

// Shards live on cluster filesystems (NFS, Lustre) where flock may be disabled: lock where
// the filesystem supports it, as HDF5 does by default, but don't fail where it doesn't.
Handle file_access(const std::string& file) {
  Handle fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), "cannot create file access properties", file),
              H5Pclose);
  check(H5Pset_file_locking(fapl.get(), 1, 1), "cannot set file locking", file);
  return fapl;
}

}  // namespace

Handle create_file(const std::string& path, const std::string& name_in_errors) {
  quiet_hdf5();
  const std::string& file = name_in_errors.empty() ? path : name_in_errors;
  Handle fapl = file_access(file);
  return Handle(check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                         "cannot create " + path, file),
                H5Fclose);
}

Handle open_file_readonly(const std::string& path, const std::string& what) {
  quiet_hdf5();
  Handle fapl = file_access(path);
  return Handle(check_id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), "cannot open " + what, path),
                H5Fclose);
}

bool is_hdf5_file(const std::string& path) {
  quiet_hdf5();
  const htri_t r = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);  // a file that is not HDF5 leaves an error stack behind
  return r > 0;
}

// ------------------------------------------------------------------ attributes

bool has_attr(hid_t loc, const char* name, const std::string& file) {
  return check_tri(H5Aexists(loc, name), std::string("cannot look up attribute '") + name + "'", file, name);
}

namespace {

void write_attr_bytes(hid_t loc, const char* name, hid_t type, const void* value,
                      const std::string& file) {
  const std::string what = std::string("cannot write attribute '") + name + "'";
  Handle space(check_id(H5Screate(H5S_SCALAR), what, file, name), H5Sclose);
  Handle attr(check_id(H5Acreate2(loc, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), what, file, name),
              H5Aclose);
  check(H5Awrite(attr.get(), type, value), what, file, name);
  attr.close(what, file, name);
}

// The attribute and its type, checked to be of the given class.
std::pair<Handle, Handle> open_attr(hid_t loc, const char* name, H5T_class_t cls, const char* class_name,
                                    const std::string& file) {
  const std::string what = std::string("cannot read attribute '") + name + "'";
  Handle attr(check_id(H5Aopen(loc, name, H5P_DEFAULT), what, file, name), H5Aclose);
  Handle type(check_id(H5Aget_type(attr.get()), what, file, name), H5Tclose);
  const H5T_class_t actual = H5Tget_class(type.get());
  if (actual == H5T_NO_CLASS) check(-1, what, file, name);
  if (actual != cls) throw Error(std::string("attribute is not ") + class_name, file, name);
  return {std::move(attr), std::move(type)};
}

}  // namespace

void write_attr(hid_t loc, const char* name, int32_t value, const std::string& file) {
  write_attr_bytes(loc, name, H5T_STD_I32LE, &value, file);
}

void write_attr(hid_t loc, const char* name, int64_t value, const std::string& file) {
  write_attr_bytes(loc, name, H5T_STD_I64LE, &value, file);
}

void write_attr(hid_t loc, const char* name, const std::string& value, const std::string& file) {
  Handle type = string_type(value.size(), file, name);
  std::vector<char> buf(std::max<size_t>(value.size(), 1), '\0');
  std::copy(value.begin(), value.end(), buf.begin());
  write_attr_bytes(loc, name, type.get(), buf.data(), file);
}

std::string read_string_attr(hid_t loc, const char* name, const std::string& file) {
  auto [attr, type] = open_attr(loc, name, H5T_STRING, "a fixed-length string", file);
  const std::string what = std::string("cannot read attribute '") + name + "'";
  if (check_tri(H5Tis_variable_str(type.get()), what, file, name))
    throw Error("attribute is not a fixed-length string", file, name);
  const size_t size = H5Tget_size(type.get());
  if (size == 0) check(-1, what, file, name);
  std::vector<char> buf(size);
  check(H5Aread(attr.get(), type.get(), buf.data()), what, file, name);
  return std::string(buf.data(), std::find(buf.begin(), buf.end(), '\0') - buf.begin());
}

int64_t read_int_attr(hid_t loc, const char* name, const std::string& file) {
  auto [attr, type] = open_attr(loc, name, H5T_INTEGER, "an integer", file);
  int64_t v = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, &v), std::string("cannot read attribute '") + name + "'",
        file, name);
  return v;
}

// ------------------------------------------------------------------ datasets

Handle string_type(size_t size, const std::string& file, const std::string& key) {
  const std::string what = "cannot make a string type";
  Handle t(check_id(H5Tcopy(H5T_C_S1), what, file, key), H5Tclose);
  check(H5Tset_size(t.get(), std::max<size_t>(size, 1)), what, file, key);
  check(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), what, file, key);
  return t;
}

Handle create_dataset(hid_t loc, const std::string& name, hid_t file_type, const DatasetLayout& l,
                      const std::string& file) {
  const std::string what = "cannot create dataset '" + name + "'";
  Handle space(check_id(H5Screate_simple(l.rank, l.dims, l.max_dims), what, file, name), H5Sclose);
  Handle dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), what, file, name), H5Pclose);
  if (l.chunk[0] > 0) {
    check(H5Pset_chunk(dcpl.get(), l.rank, l.chunk), what, file, name);
    // Checksum last, so that it covers the bytes as stored and is verified before inflate.
    if (l.deflate > 0) {
      check(H5Pset_shuffle(dcpl.get()), what, file, name);
      check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(l.deflate)), what, file, name);
    }
    check(H5Pset_fletcher32(dcpl.get()), what, file, name);
  }
  Handle dapl(check_id(H5Pcreate(H5P_DATASET_ACCESS), what, file, name), H5Pclose);
  if (!l.chunk_cache)
    check(H5Pset_chunk_cache(dapl.get(), 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT), what, file, name);
  return Handle(check_id(H5Dcreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(),
                                    dapl.get()),
                         what, file, name),
                H5Dclose);
}

namespace {

size_t next_prime(size_t n) {
  auto prime = [](size_t k) {
    for (size_t d = 2; d * d <= k; ++d)
      if (k % d == 0) return false;
    return k >= 2;
  };
  while (!prime(n)) ++n;
  return n;
}

// An access list giving the chunked dataset `dset` a chunk cache of `bytes`, at most all of
// its chunks (their hash slots are allocated at the open); invalid for other layouts.
Handle chunk_cache_access(hid_t dset, size_t bytes, const std::string& what, const std::string& file,
                          const std::string& name) {
  Handle dcpl(check_id(H5Dget_create_plist(dset), what, file, name), H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return Handle();
  hsize_t chunk[2] = {1, 1}, d[2];
  if (H5Pget_chunk(dcpl.get(), 2, chunk) < 1) check(-1, what, file, name);
  dataset_dims(dset, d, file, name);  // d[1] = 1 for rank 1, as chunk[1]
  const size_t elem = H5Tget_size(dataset_type(dset, file, name).get());
  const size_t chunk_bytes = static_cast<size_t>(chunk[0] * chunk[1]) * elem;
  const size_t chunks = std::max<size_t>(1, (static_cast<size_t>(d[0] * d[1]) * elem + chunk_bytes - 1) / chunk_bytes);
  bytes = std::min(bytes, chunks * chunk_bytes);
  Handle dapl(check_id(H5Pcreate(H5P_DATASET_ACCESS), what, file, name), H5Pclose);
  const size_t slots = next_prime(100 * std::max<size_t>(1, bytes / chunk_bytes));
  check(H5Pset_chunk_cache(dapl.get(), slots, bytes, H5D_CHUNK_CACHE_W0_DEFAULT), what, file, name);
  return dapl;
}

}  // namespace

Handle open_dataset(hid_t loc, const std::string& name, const std::string& file, size_t chunk_cache_bytes) {
  const std::string what = "cannot open dataset '" + name + "'";
  // H5Lexists fails (rather than saying no) for a path whose group is missing.
  const htri_t exists = H5Lexists(loc, name.c_str(), H5P_DEFAULT);
  if (exists <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Error("dataset '" + name + "' is missing", file, name);
  }
  Handle dset(check_id(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), what, file, name), H5Dclose);
  if (chunk_cache_bytes == 0) return dset;
  // The cache is set when a dataset is opened, and sizing it needs the chunk: open again.
  const Handle dapl = chunk_cache_access(dset.get(), chunk_cache_bytes, what, file, name);
  if (!dapl.valid()) return dset;
  dset.reset();
  return Handle(check_id(H5Dopen2(loc, name.c_str(), dapl.get()), what, file, name), H5Dclose);
}

namespace {

int space_dims(hid_t space, hsize_t d[2], const std::string& file, const std::string& name) {
  const std::string what = "cannot get the shape of dataset '" + name + "'";
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) check(rank, what, file, name);
  if (rank < 1 || rank > 2) throw Error("dataset has rank " + std::to_string(rank), file, name);
  d[1] = 1;
  check(H5Sget_simple_extent_dims(space, d, nullptr), what, file, name);
  return rank;
}

}  // namespace

size_t chunk_cache_bytes(hid_t dset, const std::string& file, const std::string& name) {
  const std::string what = "dataset '" + name + "': cannot read its chunk cache";
  Handle dapl(check_id(H5Dget_access_plist(dset), what, file, name), H5Pclose);
  size_t slots = 0, bytes = 0;
  double w0 = 0;
  check(H5Pget_chunk_cache(dapl.get(), &slots, &bytes, &w0), what, file, name);
  return bytes;
}

int dataset_dims(hid_t dset, hsize_t d[2], const std::string& file, const std::string& name) {
  Handle space(check_id(H5Dget_space(dset), "cannot get the shape", file, name), H5Sclose);
  return space_dims(space.get(), d, file, name);
}

Handle dataset_type(hid_t dset, const std::string& file, const std::string& name) {
  return Handle(check_id(H5Dget_type(dset), "cannot get the type", file, name), H5Tclose);
}

size_t fixed_string_size(hid_t dset, const std::string& file, const std::string& name) {
  Handle type = dataset_type(dset, file, name);
  const std::string what = "cannot get the type";
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls == H5T_NO_CLASS) check(-1, what, file, name);
  if (cls != H5T_STRING || check_tri(H5Tis_variable_str(type.get()), what, file, name))
    throw Error("not a fixed-length string dataset", file, name);
  const size_t size = H5Tget_size(type.get());
  if (size == 0) check(-1, what, file, name);
  return size;
}

void write_rows(hid_t dset, hid_t mem_type, int rank, hsize_t first, hsize_t count, hsize_t cols,
                const void* data, const std::string& file, const std::string& name) {
  const std::string what = "cannot write dataset '" + name + "'";
  hsize_t dims[2] = {first + count, cols};
  check(H5Dset_extent(dset, dims), what, file, name);
  if (count * cols == 0) return;
  Handle fspace(check_id(H5Dget_space(dset), what, file, name), H5Sclose);
  hsize_t start[2] = {first, 0}, size[2] = {count, cols};
  check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, size, nullptr), what, file, name);
  Handle mspace(check_id(H5Screate_simple(rank, size, nullptr), what, file, name), H5Sclose);
  check(H5Dwrite(dset, mem_type, mspace.get(), fspace.get(), H5P_DEFAULT, data), what, file, name);
}

void set_rows(hid_t dset, hsize_t rows, hsize_t cols, const std::string& file, const std::string& name) {
  hsize_t dims[2] = {rows, cols};
  check(H5Dset_extent(dset, dims), "cannot write dataset '" + name + "'", file, name);
}

void write_chunk(hid_t dset, hsize_t first, const uint8_t* stored, size_t n, const std::string& file,
                 const std::string& name) {
  const hsize_t offset[2] = {first, 0};
  check(H5Dwrite_chunk(dset, H5P_DEFAULT, 0, offset, n, stored), "cannot write a chunk of dataset '" + name + "'",
        file, name);
}

RowReader::RowReader(hid_t dset, hid_t mem_type, const std::string& file, const std::string& name)
    : dset_(dset), mem_type_(mem_type), file_(file), name_(name) {
  space_ = Handle(check_id(H5Dget_space(dset), "dataset '" + name + "': cannot get the shape", file),
                  H5Sclose);
  rank_ = space_dims(space_.get(), dims_, file, name);
  const size_t elem = H5Tget_size(mem_type);
  if (elem == 0) check(-1, "dataset '" + name + "': cannot size the memory type", file);
  row_bytes_ = elem * (rank_ == 2 ? dims_[1] : 1);
}

// With a memory space shaped like the selection: HDF5 copies a same-shaped selection chunk
// by chunk but falls back to element-wise iteration for a 1-D buffer (10x slower).
void RowReader::read(hsize_t first, hsize_t count, void* out) {
  if (count == 0) return;
  if (first + count > dims_[0])
    throw Error("dataset '" + name_ + "': rows [" + std::to_string(first) + ", " +
                    std::to_string(first + count) + ") outside its " + std::to_string(dims_[0]) + " rows",
                file_);
  if (row_bytes_ == 0) return;
  const std::string what = "dataset '" + name_ + "': checksum/read failure";
  hsize_t start[2] = {first, 0}, size[2] = {count, dims_[1]};
  check(H5Sselect_hyperslab(space_.get(), H5S_SELECT_SET, start, nullptr, size, nullptr), what, file_);
  Handle mspace(check_id(H5Screate_simple(rank_, size, nullptr), what, file_), H5Sclose);
  check(H5Dread(dset_, mem_type_, mspace.get(), space_.get(), H5P_DEFAULT, out), what, file_);
}

}  // namespace h5
}  // namespace tpuperf
