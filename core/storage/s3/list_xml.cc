#include "core/storage/s3/list_xml.h"

#include <expat.h>
#include <fmt/format.h>

#include <charconv>
#include <memory>
#include <string_view>

namespace tiledbfs::core::s3 {
namespace {

// Element names seen from the root, and the text of the current leaf.
struct ParseState {
  XML_Parser parser = nullptr;
  const ListLimits* limits = nullptr;
  const char* root = nullptr;  // the root element required, if any
  std::vector<std::string> path;
  std::string text;
  std::string error;  // set by a handler; stops the parser
  // ListObjectsV2
  ListPage page;
  ListedObject current;
  bool have_key = false;
  bool have_size = false;
  bool saw_truncated = false;
  // Error bodies
  S3ErrorBody err;

  void Fail(std::string why) {
    if (error.empty()) error = std::move(why);
    XML_StopParser(parser, XML_FALSE);
  }
};

void OnStart(void* data, const XML_Char* name, const XML_Char** /*attrs*/) {
  auto* s = static_cast<ParseState*>(data);
  if (!s->error.empty()) return;
  if (s->path.size() >= 16) return s->Fail("elements nested too deep");
  if (s->path.empty() && s->root != nullptr && std::string_view(name) != s->root) {
    return s->Fail(fmt::format("the root element is <{}>, not <{}>", name, s->root));
  }
  s->path.emplace_back(name);
  s->text.clear();
  if (s->path.size() == 2 && s->path[1] == "Contents") {
    s->current = {};
    s->have_key = s->have_size = false;
  }
}

void OnText(void* data, const XML_Char* text, int len) {
  auto* s = static_cast<ParseState*>(data);
  if (!s->error.empty()) return;
  if (s->text.size() + static_cast<size_t>(len) > s->limits->max_text) {
    return s->Fail(fmt::format("an element's text is longer than {} bytes", s->limits->max_text));
  }
  s->text.append(text, static_cast<size_t>(len));
}

bool ParseUint(std::string_view t, uint64_t* v) {
  if (t.empty()) return false;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
  return ec == std::errc() && end == t.data() + t.size();
}

void OnEndList(void* data, const XML_Char* /*name*/) {
  auto* s = static_cast<ParseState*>(data);
  if (!s->error.empty() || s->path.empty()) return;
  const std::vector<std::string>& p = s->path;
  if (p.size() == 3 && p[1] == "Contents") {
    if (p[2] == "Key") {
      s->current.key = s->text;
      s->have_key = true;
    } else if (p[2] == "Size") {
      if (!ParseUint(s->text, &s->current.size)) {
        return s->Fail(fmt::format("Contents Size '{}' is not a byte count", s->text));
      }
      s->have_size = true;
    } else if (p[2] == "ETag") {
      s->current.etag = s->text;
    }
  } else if (p.size() == 2 && p[1] == "Contents") {
    if (!s->have_key || !s->have_size) return s->Fail("a Contents entry without Key or Size");
    s->page.objects.push_back(std::move(s->current));
  } else if (p.size() == 3 && p[1] == "CommonPrefixes" && p[2] == "Prefix") {
    s->page.prefixes.push_back(s->text);
  } else if (p.size() == 2 && p[1] == "IsTruncated") {
    if (s->text != "true" && s->text != "false") {
      return s->Fail(fmt::format("IsTruncated is '{}', not true or false", s->text));
    }
    s->page.truncated = s->text == "true";
    s->saw_truncated = true;
  } else if (p.size() == 2 && p[1] == "NextContinuationToken") {
    s->page.next_token = s->text;
  }
  if (s->page.objects.size() + s->page.prefixes.size() > s->limits->max_entries) {
    return s->Fail(fmt::format("more than {} entries in one page", s->limits->max_entries));
  }
  s->path.pop_back();
  s->text.clear();
}

void OnEndError(void* data, const XML_Char* /*name*/) {
  auto* s = static_cast<ParseState*>(data);
  if (!s->error.empty() || s->path.empty()) return;
  if (s->path.size() == 2 && s->path[0] == "Error") {
    if (s->path[1] == "Code") s->err.code = s->text;
    if (s->path[1] == "Message") s->err.message = s->text;
  }
  s->path.pop_back();
  s->text.clear();
}

// A document type declaration could define entities: refused outright.
void OnDoctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  static_cast<ParseState*>(data)->Fail("a DOCTYPE declaration (refused)");
}

struct ParserDeleter {
  void operator()(XML_Parser p) const { XML_ParserFree(p); }
};

// Runs expat over `xml` with the given end handler; returns expat's or the
// handlers' complaint, empty when the document parsed.
std::string Run(Bytes xml, ParseState& s, XML_EndElementHandler on_end) {
  std::unique_ptr<XML_ParserStruct, ParserDeleter> parser(XML_ParserCreate(nullptr));
  if (!parser) return "cannot create an XML parser (out of memory)";
  s.parser = parser.get();
  XML_SetUserData(s.parser, &s);
  XML_SetElementHandler(s.parser, OnStart, on_end);
  XML_SetCharacterDataHandler(s.parser, OnText);
  XML_SetStartDoctypeDeclHandler(s.parser, OnDoctype);
  if (xml.size() > static_cast<size_t>(INT32_MAX)) return "the body is larger than 2 GiB";
  const XML_Status st = XML_Parse(s.parser, reinterpret_cast<const char*>(xml.data()),
                                  static_cast<int>(xml.size()), XML_TRUE);
  if (!s.error.empty()) return s.error;
  if (st != XML_STATUS_OK) {
    return fmt::format("{} at line {}", XML_ErrorString(XML_GetErrorCode(s.parser)),
                       XML_GetCurrentLineNumber(s.parser));
  }
  return {};
}

}  // namespace

Result<ListPage> ParseListObjectsV2(Bytes xml, const ListLimits& limits) {
  ParseState s;
  s.limits = &limits;
  s.root = "ListBucketResult";
  std::string why = Run(xml, s, OnEndList);
  auto fail = [](const std::string& w) { return Error::Corrupt("ListObjectsV2 response: " + w); };
  if (!why.empty()) return fail(why);
  if (!s.path.empty()) return fail("unterminated document");
  if (!s.saw_truncated) return fail("no IsTruncated (not a ListBucketResult)");
  if (s.page.truncated && s.page.next_token.empty()) {
    return fail("IsTruncated is true but there is no NextContinuationToken");
  }
  return std::move(s.page);
}

S3ErrorBody ParseS3Error(Bytes xml) {
  ParseState s;
  ListLimits limits;
  s.limits = &limits;
  if (!Run(xml, s, OnEndError).empty()) return {};
  return s.err;
}

}  // namespace tiledbfs::core::s3
