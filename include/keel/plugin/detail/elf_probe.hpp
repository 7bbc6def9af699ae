// SPDX-License-Identifier: Apache-2.0
// What the library loader asks of a file before dlopen sees it: whether an
// ELF object's loadable segments lie inside the file, what kind of file a
// path names, and whether an object is already mapped.
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace detail {

// dlopen trusts an ELF file's program headers: a file cut inside one of its
// loadable segments is mapped past its end, and the first relocation that
// touches the missing pages kills the process with SIGBUS. Checking that
// every PT_LOAD segment lies inside the file turns that into an error.
// Returns the reason the file cannot be loaded, or an empty string when the
// segments fit (or the file is not a native ELF object: dlopen explains those).
inline std::string truncated_segments(const std::string& path, std::uint64_t file_size) {
  std::ifstream file(path, std::ios::binary);
  ElfW(Ehdr) header{};
  if (!file.read(reinterpret_cast<char*>(&header), sizeof header)) return {};
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return {};
#if defined(__LP64__)
  if (header.e_ident[EI_CLASS] != ELFCLASS64) return {};
#else
  if (header.e_ident[EI_CLASS] != ELFCLASS32) return {};
#endif
  if (header.e_phentsize != sizeof(ElfW(Phdr))) return {};
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    ElfW(Phdr) segment{};
    file.seekg(static_cast<std::streamoff>(header.e_phoff + i * sizeof segment));
    if (!file.read(reinterpret_cast<char*>(&segment), sizeof segment)) {
      return "the file is truncated: its program headers end past the end of the file";
    }
    // Written so that hostile offsets near 2^64 cannot wrap the comparison.
    if (segment.p_type == PT_LOAD && (segment.p_filesz > file_size || segment.p_offset > file_size - segment.p_filesz)) {
      return "the file is truncated: loadable segment " + std::to_string(i) + " ends at byte " +
             std::to_string(segment.p_offset + segment.p_filesz) + " of a " + std::to_string(file_size) +
             "-byte file";
    }
  }
  return {};
}

// What a stat's file type is, for the error that refuses anything but a regular file.
inline const char* file_type_name(mode_t mode) noexcept {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "an unknown file type";
}

// dlopen(RTLD_NOLOAD) never loads: it only answers whether the object is
// mapped (and if so takes a reference we must give back).
inline void* probe_mapped(const std::string& path) noexcept {
  return ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
}

} KEEL_END_NAMESPACE  // namespace keel::detail
