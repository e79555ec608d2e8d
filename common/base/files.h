// Small filesystem helpers shared by every stage. Everything that writes an output
// writes a temporary file and renames it, so a reader never sees a partial file.
#pragma once

#include <string>

namespace tpuperf {

// Writes content to "<path>.tmp.<pid>", flushes, fsyncs and renames it to path.
void write_file_atomic(const std::string& path, const std::string& content);
// Removes the "<name>.tmp.<digits>" files that write_file_atomic left in dir (and below it
// when recursive) when its process was killed between create and rename; returns how many.
// Call it only where no other process writes: a live writer's file would go too.
int remove_stale_temporaries(const std::string& dir, bool recursive);
std::string read_text_file(const std::string& path);
// Creates a directory and its parents; throws Error naming the path on failure.
void make_dirs(const std::string& path);
// Renames, fsyncing the target directory so the rename survives a crash.
void rename_durable(const std::string& from, const std::string& to);

}  // namespace tpuperf
