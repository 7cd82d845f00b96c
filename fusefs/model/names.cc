#include "fusefs/model/names.h"

namespace tiledbfs::fusefs {

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string EscapeName(const std::string& name) {
  if (name.empty()) return "%00";
  std::string out;
  for (char c : name) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out.push_back(c);
  }
  return out;
}

std::string UnescapeName(const std::string& f) {
  if (f == "%00") return "";
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '%' && i + 2 < f.size() + 0 && f.compare(i, 3, "%25") == 0) {
      out.push_back('%');
      i += 2;
    } else if (f[i] == '%' && f.compare(i, 3, "%2F") == 0) {
      out.push_back('/');
      i += 2;
    } else {
      out.push_back(f[i]);
    }
  }
  return out;
}

}  // namespace tiledbfs::fusefs
