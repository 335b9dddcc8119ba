// nitro's CPU device id in C++ (nitro.devices.cpu.cpu_id_from / cpu_device_id), so that a C++
// application finds the model of the CPU it runs on in a header from `nitro export-cpp`, which
// copies this file verbatim: cpu_<slug of the model name>[_family<F>_model<M> where the name is
// generic]_<threads>t, threads = the CPUs this process may use (sched_getaffinity), so taskset,
// a cpuset or a container's CPU limit changes the id, as it does in Python.
//
// /proc/cpuinfo is read as Python reads it (UTF-8 text, str.splitlines, the first value of each
// key, keys and values str.strip()ped) and the id formed by the same rules: the slug is the name
// lower-cased with each run of other than [a-z0-9] as one "_" (none first or last); a name is
// generic when it has no ASCII digit outside a clock ("@ 2.20GHz") or holds virtual, qemu, kvm
// or common (any case); a missing or empty model name is the machine's (uname, "unknown" if
// none). Differences: a value of 256 bytes or more gives no id (-1), and family and model count
// as numbers in ASCII digits only (Python's str.isdigit takes any script's). Nothing allocates
// (but the CPU set of a machine of over 1024 CPUs). Linux only: on other systems this_cpu_id
// returns -1. Versioned as selector_eval.hpp is (guard, namespace): bump
// both when the id's rules change.
#ifndef NITRO_CPU_ID_HPP_V1
#define NITRO_CPU_ID_HPP_V1

#include <cstddef>
#include <cstring>
#if defined(__linux__)
#include <cerrno>
#include <fcntl.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>
#endif

namespace nitro_cpu_v1 {

constexpr std::size_t kMaxValue = 256;  // bytes of a field's value kept; a longer one gives no id

inline unsigned byte_at(const char* p) { return static_cast<unsigned char>(*p); }

// Bytes of the UTF-8 character at p (1 for a stray continuation byte), at most n.
inline std::size_t char_len(const char* p, std::size_t n) {
  const unsigned c = byte_at(p);
  const std::size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
  return len < n ? len : n;
}

// Bytes of the Python whitespace character (str.isspace) at p[0..n), 0 if none.
inline std::size_t space_at(const char* p, std::size_t n) {
  const unsigned c = byte_at(p);
  if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) return 1;
  const unsigned c1 = n >= 2 ? byte_at(p + 1) : 0, c2 = n >= 3 ? byte_at(p + 2) : 0;
  if (c == 0xc2 && (c1 == 0x85 || c1 == 0xa0)) return 2;                      // U+0085, U+00A0
  if ((c == 0xe1 && c1 == 0x9a && c2 == 0x80) || (c == 0xe3 && c1 == 0x80 && c2 == 0x80) ||
      (c == 0xe2 && c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8a) || c2 == 0xa8 || c2 == 0xa9 || c2 == 0xaf)) ||
      (c == 0xe2 && c1 == 0x81 && c2 == 0x9f))                                  // U+1680, 3000, 2000-200A, 2028/9, 202F, 205F
    return 3;
  return 0;
}

// Bytes of the line break of str.splitlines at p[0..n), 0 if none.
inline std::size_t break_at(const char* p, std::size_t n) {
  const unsigned c = byte_at(p);
  if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) return 1;
  const std::size_t s = space_at(p, n);                // U+0085, U+2028, U+2029 are both
  const unsigned c2 = s == 3 ? byte_at(p + 2) : 0;
  return (s == 2 && byte_at(p + 1) == 0x85) || c2 == 0xa8 || c2 == 0xa9 ? s : 0;
}

// [*b, *e) without Python whitespace at either end (str.strip).
inline void strip(const char*& b, const char*& e) {
  while (b < e && space_at(b, static_cast<std::size_t>(e - b))) b += space_at(b, static_cast<std::size_t>(e - b));
  const char* last = b;                // the end of the last character that is not whitespace
  for (const char* p = b; p < e;) {
    const std::size_t n = static_cast<std::size_t>(e - p), s = space_at(p, n);
    p += s ? s : char_len(p, n);
    if (!s) last = p;
  }
  e = last;
}

// The first value of a key, as Python's dict.setdefault keeps it.
struct Field {
  char text[kMaxValue];
  std::size_t size;
  bool seen, too_long;
};

struct Fields {
  Field name, family, model;
  bool complete() const { return name.seen && family.seen && model.seen; }
};

// One line of /proc/cpuinfo: "key: value" (split at the first ':'), else nothing.
inline void take_line(Fields& f, const char* b, const char* e) {
  const char* colon = static_cast<const char*>(std::memchr(b, ':', static_cast<std::size_t>(e - b)));
  if (colon == nullptr) return;
  const char *kb = b, *ke = colon, *vb = colon + 1, *ve = e;
  strip(kb, ke);
  strip(vb, ve);
  const std::size_t k = static_cast<std::size_t>(ke - kb);
  Field* field = k == 10 && std::memcmp(kb, "model name", 10) == 0   ? &f.name
                 : k == 10 && std::memcmp(kb, "cpu family", 10) == 0 ? &f.family
                 : k == 5 && std::memcmp(kb, "model", 5) == 0        ? &f.model
                                                                      : nullptr;
  if (field == nullptr || field->seen) return;
  field->seen = true;
  field->size = static_cast<std::size_t>(ve - vb);
  field->too_long = field->size >= kMaxValue;
  if (!field->too_long) std::memcpy(field->text, vb, field->size);
}

// Every complete line of text[0..n) (the last one too when `all`); returns the bytes taken.
inline std::size_t take_lines(Fields& f, const char* text, std::size_t n, bool all) {
  std::size_t start = 0, i = 0;
  while (i < n) {
    const std::size_t br = break_at(text + i, n - i);
    if (br == 0) {
      ++i;
      continue;
    }
    take_line(f, text + start, text + i);
    i += br;
    start = i;
  }
  if (all && start < n) {
    take_line(f, text + start, text + n);
    start = n;
  }
  return start;
}

// Writes into out[0..size) as snprintf does; `length` counts every byte asked for.
struct Writer {
  char* out;
  std::size_t size, length;
  void put(char c) {
    if (length + 1 < size) out[length] = c;
    ++length;
  }
  void put(const char* s, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) put(s[i]);
  }
  void put(long v) {
    char digits[24];
    int n = 0;
    unsigned long u = v < 0 ? 0UL - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
    do digits[n++] = static_cast<char>('0' + u % 10); while (u /= 10);
    if (v < 0) put('-');
    while (n) put(digits[--n]);
  }
  int finish() {
    if (size) out[length < size ? length : size - 1] = '\0';
    return static_cast<int>(length);
  }
};

// The ASCII letter a character is under Python's re.IGNORECASE for the generic words (İ and ı
// are i, the Kelvin sign k), else 0; *len: its bytes.
inline char folded(const char* p, std::size_t n, std::size_t* len) {
  const unsigned c = byte_at(p), c1 = n >= 2 ? byte_at(p + 1) : 0, c2 = n >= 3 ? byte_at(p + 2) : 0;
  *len = char_len(p, n);
  if (c >= 'A' && c <= 'Z') return static_cast<char>(c - 'A' + 'a');
  if (c >= 'a' && c <= 'z') return static_cast<char>(c);
  if (c == 0xc4 && (c1 == 0xb0 || c1 == 0xb1)) return 'i';
  if (c == 0xe2 && c1 == 0x84 && c2 == 0xaa) return 'k';
  return 0;
}

// A name with no model number, or a hypervisor's: no ASCII digit outside "@ <n>[GM]Hz", or
// virtual|qemu|kvm|common in any case (nitro.devices.cpu._GENERIC).
inline bool generic_name(const char* name, std::size_t n) {
  bool number = false;
  for (std::size_t i = 0; i < n && !number;) {
    if (name[i] == '@') {                 // a clock: @\s*[0-9.]+\s*[GM]Hz, skipped
      std::size_t j = i + 1, s;
      while (j < n && (s = space_at(name + j, n - j))) j += s;
      const std::size_t digits = j;
      while (j < n && ((name[j] >= '0' && name[j] <= '9') || name[j] == '.')) ++j;
      const bool some = j > digits;
      while (some && j < n && (s = space_at(name + j, n - j))) j += s;
      if (some && j + 3 <= n && (name[j] == 'G' || name[j] == 'g' || name[j] == 'M' || name[j] == 'm') &&
          (name[j + 1] == 'H' || name[j + 1] == 'h') && (name[j + 2] == 'Z' || name[j + 2] == 'z')) {
        i = j + 3;
        continue;
      }
    }
    number = name[i] >= '0' && name[i] <= '9';
    ++i;
  }
  if (!number) return true;
  static const char* const words[] = {"virtual", "qemu", "kvm", "common"};
  for (const char* word : words)
    for (std::size_t i = 0; i < n; i += char_len(name + i, n - i)) {
      std::size_t j = i, w = 0, len;
      while (word[w] && j < n && folded(name + j, n - j, &len) == word[w]) {
        j += len;
        ++w;
      }
      if (!word[w]) return true;
    }
  return false;
}

// nitro's slug of name (nitro.devices.cpu._slug): lower case, each run of other than [a-z0-9]
// one "_", none first or last (İ lower-cases to i and a combining dot, the Kelvin sign to k).
inline void put_slug(Writer& w, const char* name, std::size_t n) {
  bool gap = false, any = false;
  for (std::size_t i = 0; i < n;) {
    const unsigned c = byte_at(name + i), c1 = i + 1 < n ? byte_at(name + i + 1) : 0,
                   c2 = i + 2 < n ? byte_at(name + i + 2) : 0;
    const std::size_t len = char_len(name + i, n - i);
    char ch = 0;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) ch = static_cast<char>(c);
    else if (c >= 'A' && c <= 'Z') ch = static_cast<char>(c - 'A' + 'a');
    else if (c == 0xe2 && c1 == 0x84 && c2 == 0xaa) ch = 'k';
    else if (c == 0xc4 && c1 == 0xb0) ch = 'i';
    if (ch) {
      if (gap && any) w.put('_');
      w.put(ch);
      any = true;
      gap = c == 0xc4;                   // İ: the combining dot after the i
    } else {
      gap = true;
    }
    i += len;
  }
}

inline bool ascii_digits(const Field& f) {
  if (!f.seen || f.size == 0) return false;
  for (std::size_t i = 0; i < f.size; ++i)
    if (f.text[i] < '0' || f.text[i] > '9') return false;
  return true;
}

// The id of fields from /proc/cpuinfo and `threads` CPUs into out[0..size) (NUL-terminated,
// cut short when it does not fit); returns its length, or -1 when a value is too long to keep.
inline int id_of(const Fields& f, long threads, const char* machine, char* out, std::size_t size) {
  if (f.name.too_long || f.family.too_long || f.model.too_long) {
    if (size) out[0] = '\0';
    return -1;
  }
  const char* name = f.name.text;
  std::size_t n = f.name.size;
  if (!f.name.seen || n == 0) {          // platform.machine() or "unknown"
    name = machine != nullptr && machine[0] ? machine : "unknown";
    n = std::strlen(name);
  }
  Writer w{out, size, 0};
  w.put("cpu_", 4);
  put_slug(w, name, n);
  if (generic_name(name, n) && ascii_digits(f.family) && ascii_digits(f.model)) {
    w.put("_family", 7);
    w.put(f.family.text, f.family.size);
    w.put("_model", 6);
    w.put(f.model.text, f.model.size);
  }
  w.put('_');
  w.put(threads);
  w.put('t');
  return w.finish();
}

// nitro.devices.cpu.cpu_id_from(cpuinfo_fields(text), threads) of the text of /proc/cpuinfo,
// `machine` standing for platform.machine() where the text has no model name. Writes the id
// into out[0..size), NUL-terminated and cut short when size <= its length, as snprintf does;
// returns its length, or -1 (an empty out) when a field's value is 256 bytes or more.
inline int cpu_id_from(const char* cpuinfo, std::size_t length, long threads, const char* machine, char* out,
                       std::size_t size) {
  static_assert(sizeof(Fields) < 1024, "Fields lives on the stack");
  Fields f{};
  if (cpuinfo != nullptr) take_lines(f, cpuinfo, length, true);
  return id_of(f, threads, machine, out, size);
}

// The CPUs this process may run on (Python's len(os.sched_getaffinity(0))), or -1.
inline long usable_cpus() {
#if defined(__linux__) && defined(CPU_COUNT) && defined(CPU_ALLOC)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  for (int n = 2 * CPU_SETSIZE; errno == EINVAL && n <= (1 << 22); n *= 2) {  // over 1024 CPUs
    cpu_set_t* big = CPU_ALLOC(n);
    if (big == nullptr) return -1;
    const std::size_t bytes = CPU_ALLOC_SIZE(n);
    const long count = sched_getaffinity(0, bytes, big) == 0 ? CPU_COUNT_S(bytes, big) : -1;
    CPU_FREE(big);
    if (count >= 0) return count;
  }
#endif
  return -1;
}

// The fields of the cpuinfo file at path, read a block at a time up to the first value of each
// (a line longer than the block is taken by its first 16 KiB: its key, and a value too long to
// keep); false: no such file, or not Linux.
#if defined(__linux__)
inline bool read_fields(const char* path, Fields& f) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16384];
  std::size_t held = 0;
  bool skipping = false;               // inside a line longer than buf, already taken
  for (;;) {
    const ssize_t got = read(fd, buf + held, sizeof buf - held);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {                      // the end (or an error: what was read stands)
      if (!skipping) take_lines(f, buf, held, true);
      break;
    }
    held += static_cast<std::size_t>(got);
    std::size_t from = 0;
    if (skipping) {                      // drop the rest of the long line
      while (from < held && !break_at(buf + from, held - from)) ++from;
      if (from == held) {
        held = 0;
        continue;
      }
      skipping = false;
    }
    const std::size_t used = from + take_lines(f, buf + from, held - from, false);
    if (f.complete()) break;
    std::memmove(buf, buf + used, held - used);
    held -= used;
    if (held == sizeof buf) {            // one line fills buf: its key is in it, the rest is dropped
      take_lines(f, buf, held, true);
      skipping = true;
      held = 0;
    }
  }
  close(fd);
  return true;
}
#else
inline bool read_fields(const char*, Fields&) { return false; }
#endif

// This machine's /proc/cpuinfo fields (read up to the first value of each, as Python keeps it)
// and machine name: read once, as nitro.devices.cpu caches them. No file: no fields.
struct ThisCpu {
  Fields fields;
  char machine[128];
  bool ok;
};

inline const ThisCpu& this_cpu() {
  static const ThisCpu cpu = [] {
    ThisCpu c{};
#if defined(__linux__)
    c.ok = true;
    struct utsname u;
    if (uname(&u) == 0) {
      const std::size_t n = strnlen(u.machine, sizeof u.machine);
      std::memcpy(c.machine, u.machine, n < sizeof c.machine ? n : sizeof c.machine - 1);
    }
    read_fields("/proc/cpuinfo", c.fields);
#endif
    return c;
  }();
  return cpu;
}

// This machine's nitro CPU id (nitro.devices.cpu_device_id()) into out[0..size) as cpu_id_from
// writes it; returns its length, or -1 (an empty out) on a system other than Linux or where the
// process's CPU set cannot be read. The CPU set is read on each call (one system call): a
// process moved by taskset or a cpuset gets its new id.
inline int this_cpu_id(char* out, std::size_t size) {
  const ThisCpu& cpu = this_cpu();
  const long threads = cpu.ok ? usable_cpus() : -1;
  if (threads < 0) {
    if (size) out[0] = '\0';
    return -1;
  }
  return id_of(cpu.fields, threads, cpu.machine, out, size);
}

}  // namespace nitro_cpu_v1

#endif  // NITRO_CPU_ID_HPP_V1
