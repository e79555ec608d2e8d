// The one HDF5 layer of tpuperf (C API, HDF5 1.10): every HDF5 file it writes or reads
// (the shards, the feature files) goes through these handles and checked calls.
//
// - Handle owns an identifier and closes it with the matching H5?close.
// - Every H5* call's result is checked; a failure throws Error(reason, file, key) whose
//   reason says what failed and ends with HDF5's own detail (see hdf5_error_detail), the
//   file is the file being written or read and the key the dataset or attribute.
// - quiet_hdf5() runs before any HDF5 use: no error stacks printed on stderr, no atexit
//   clean-up that could crash after a failed close.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

namespace tpuperf {

// Call before any HDF5 use (any number of times).
void quiet_hdf5();
// The cause of the last HDF5 failure, " (HDF5: ...)" to append to an Error's reason, or ""
// when HDF5 recorded none; clears HDF5's error stack. Take it right after the failing
// call: the next HDF5 call, even a successful close, clears the stack.
std::string hdf5_error_detail();

namespace h5 {

// Owns one HDF5 identifier.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes ignoring the result: for clean-up after another error.
  void reset();
  // Closing can fail (a file's flush on a full disk): writers check it. Throws
  // Error("cannot close <what>" + detail, file, key).
  void close(const std::string& what, const std::string& file, const std::string& key = "");

 private:
  hid_t id_ = -1;
  herr_t (*closer_)(hid_t) = nullptr;
};

// Checked calls: id (or result) < 0 throws Error(what + hdf5_error_detail(), file, key).
hid_t check_id(hid_t id, const std::string& what, const std::string& file,
               const std::string& key = "");
void check(herr_t result, const std::string& what, const std::string& file,
           const std::string& key = "");
// For H5?exists and other tri-state calls: true, false, or throws on failure.
bool check_tri(htri_t result, const std::string& what, const std::string& file,
               const std::string& key = "");

// The native memory type of T (int32_t, int64_t, uint8_t, uint64_t, float, double).
template <class T>
hid_t native_type();
template <> hid_t native_type<int32_t>();
template <> hid_t native_type<int64_t>();
template <> hid_t native_type<uint8_t>();
template <> hid_t native_type<uint64_t>();
template <> hid_t native_type<float>();
template <> hid_t native_type<double>();

// ------------------------------------------------------------------ files

// path is both created and named in errors unless name_in_errors is given (a writer
// that creates "<shard>.tmp" reports the shard).
Handle create_file(const std::string& path, const std::string& name_in_errors = "");
// what names the file's role in the error: "cannot open <what>".
Handle open_file_readonly(const std::string& path, const std::string& what = "HDF5 file");
// H5Fis_hdf5: false for a file that exists but is not HDF5.
bool is_hdf5_file(const std::string& path);

// ------------------------------------------------------------------ attributes (of a file)

bool has_attr(hid_t loc, const char* name, const std::string& file);
void write_attr(hid_t loc, const char* name, int32_t value, const std::string& file);
void write_attr(hid_t loc, const char* name, int64_t value, const std::string& file);
// A fixed-length, NUL-padded string (HDF5 cannot store a zero-length one: "" takes 1 byte).
void write_attr(hid_t loc, const char* name, const std::string& value, const std::string& file);
// Throws when the attribute is missing or of another class.
std::string read_string_attr(hid_t loc, const char* name, const std::string& file);
int64_t read_int_attr(hid_t loc, const char* name, const std::string& file);

// ------------------------------------------------------------------ datasets

// A fixed-length, NUL-padded string type of the given size (at least 1 byte).
Handle string_type(size_t size, const std::string& file, const std::string& key);

// How a dataset is stored. Chunked datasets always carry a fletcher32 checksum, so a
// damaged file is detected on read.
struct DatasetLayout {
  int rank = 1;                 // 1 or 2
  hsize_t dims[2] = {0, 0};     // initial extent
  hsize_t max_dims[2] = {0, 0};
  hsize_t chunk[2] = {0, 0};    // {0, ..}: contiguous, no checksum
  int deflate = 0;              // 1..9: shuffle + deflate at that level
  bool chunk_cache = true;      // false when rows are written in whole chunks
};
Handle create_dataset(hid_t loc, const std::string& name, hid_t file_type,
                      const DatasetLayout& layout, const std::string& file);
// Throws "dataset 'name' is missing" when there is none. chunk_cache_bytes > 0 gives the
// dataset a chunk cache of that many bytes of inflated chunks, at most all of its chunks
// (HDF5's default: 1 MiB), with about 100 hash slots per chunk that fits, as HDF5's guide
// advises: a chunk whose slot is taken evicts the other, so slots must far outnumber
// chunks. HDF5 gives a dataset that is open already its first handle's cache: open it once.
Handle open_dataset(hid_t loc, const std::string& name, const std::string& file, size_t chunk_cache_bytes = 0);
// The bytes of a dataset's chunk cache, as HDF5 reports them.
size_t chunk_cache_bytes(hid_t dset, const std::string& file, const std::string& name);
// The extent of a rank-1 or rank-2 dataset (d[1] = 1 for rank 1); returns the rank.
int dataset_dims(hid_t dset, hsize_t d[2], const std::string& file, const std::string& name);
// The byte size of a fixed-length string dataset's elements; throws for other types.
size_t fixed_string_size(hid_t dset, const std::string& file, const std::string& name);
Handle dataset_type(hid_t dset, const std::string& file, const std::string& name);

// Writes rows [first, first + count) of a rank-1 or rank-2 dataset of `cols` columns,
// growing its extent to first + count first.
void write_rows(hid_t dset, hid_t mem_type, int rank, hsize_t first, hsize_t count, hsize_t cols,
                const void* data, const std::string& file, const std::string& name);

// Sets the extent of a rank-1 or rank-2 dataset to rows (x cols).
void set_rows(hid_t dset, hsize_t rows, hsize_t cols, const std::string& file, const std::string& name);
// Writes the chunk starting at row first as stored, that is encoded by the dataset's
// filters already (hdf5_chunk.h): H5Dwrite_chunk, every filter marked as applied. The
// extent must cover the chunk's first row.
void write_chunk(hid_t dset, hsize_t first, const uint8_t* stored, size_t n, const std::string& file,
                 const std::string& name);

// Reads rows of one rank-1 or rank-2 dataset into memory of mem_type, many reads with one
// file dataspace. A failed read (a checksum error) throws Error naming the dataset.
class RowReader {
 public:
  RowReader(hid_t dset, hid_t mem_type, const std::string& file, const std::string& name);
  int rank() const { return rank_; }
  hsize_t rows() const { return dims_[0]; }
  hsize_t cols() const { return dims_[1]; }
  size_t row_bytes() const { return row_bytes_; }  // in memory
  // Rows [first, first + count) to out (count x cols elements); throws when outside.
  void read(hsize_t first, hsize_t count, void* out);

 private:
  hid_t dset_, mem_type_;
  std::string file_, name_;
  Handle space_;
  int rank_ = 1;
  hsize_t dims_[2] = {0, 1};
  size_t row_bytes_ = 0;
};

}  // namespace h5
}  // namespace tpuperf
