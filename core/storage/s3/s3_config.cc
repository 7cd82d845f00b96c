#include "core/storage/s3/s3_config.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tiledbfs::core::s3 {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

using Ini = std::map<std::string, std::map<std::string, std::string>>;

const std::map<std::string, std::string>* Section(const Ini& ini, const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

std::optional<std::string> Get(const std::map<std::string, std::string>* section, const char* key) {
  if (section == nullptr) return std::nullopt;
  auto it = section->find(key);
  if (it == section->end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::optional<std::string> NonEmpty(std::optional<std::string> v) {
  if (v && v->empty()) return std::nullopt;
  return v;
}

}  // namespace

Ini ParseIni(std::string_view text) {
  Ini out;
  std::string section;
  bool in_section = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!raw.empty() && (raw[0] == ' ' || raw[0] == '\t')) continue;  // nested block
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') continue;
      section = std::string(Trim(line.substr(1, line.size() - 2)));
      in_section = true;
      out[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (!in_section || eq == std::string_view::npos) continue;
    out[section][Lower(Trim(line.substr(0, eq)))] = std::string(Trim(line.substr(eq + 1)));
  }
  return out;
}

Result<S3Config> ResolveS3Config(const S3Options& options, const EnvLookup& env,
                                 const FileReader& read_file) {
  S3Config c;
  const std::string home = NonEmpty(env("HOME")).value_or("");
  const std::string credentials_path =
      NonEmpty(env("AWS_SHARED_CREDENTIALS_FILE")).value_or(home + "/.aws/credentials");
  const std::string config_path = NonEmpty(env("AWS_CONFIG_FILE")).value_or(home + "/.aws/config");
  const Ini credentials = ParseIni(read_file(credentials_path).value_or(""));
  const Ini config = ParseIni(read_file(config_path).value_or(""));

  const std::string profile =
      options.profile ? *options.profile : NonEmpty(env("AWS_PROFILE")).value_or("default");
  const auto* cred_section = Section(credentials, profile);
  const auto* config_section =
      Section(config, profile == "default" ? "default" : "profile " + profile);
  if (options.profile && cred_section == nullptr && config_section == nullptr) {
    return Error::InvalidArgument(fmt::format("S3 profile '{}' is in neither {} nor {}", profile,
                                              credentials_path, config_path));
  }

  // Region and endpoint: options, then environment, then the profile.
  if (options.region) {
    c.region = *options.region;
  } else if (auto r = NonEmpty(env("AWS_REGION"))) {
    c.region = *r;
  } else if (auto r2 = NonEmpty(env("AWS_DEFAULT_REGION"))) {
    c.region = *r2;
  } else if (auto r3 = Get(config_section, "region")) {
    c.region = *r3;
  }
  std::optional<std::string> endpoint = options.endpoint;
  if (!endpoint) endpoint = NonEmpty(env("AWS_ENDPOINT_URL_S3"));
  if (!endpoint) endpoint = NonEmpty(env("AWS_ENDPOINT_URL"));
  if (!endpoint) endpoint = Get(config_section, "endpoint_url");
  if (endpoint) {
    std::string e = *endpoint;
    while (!e.empty() && e.back() == '/') e.pop_back();
    if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0) {
      return Error::InvalidArgument(
          fmt::format("S3 endpoint '{}' is not an http:// or https:// URL", *endpoint));
    }
    if (e.find('/', e.find("//") + 2) != std::string::npos) {
      return Error::InvalidArgument(
          fmt::format("S3 endpoint '{}' has a path: give scheme://host[:port]", *endpoint));
    }
    c.endpoint = e;
    c.custom_endpoint = true;
  } else {
    c.endpoint = "https://s3." + c.region + ".amazonaws.com";
  }
  c.path_style = options.path_style.value_or(c.custom_endpoint);

  if (options.parallel) {
    if (*options.parallel == 0) return Error::InvalidArgument("s3_parallel must be at least 1");
    c.parallel = *options.parallel;
  }
  if (options.recheck_seconds) c.recheck_seconds = *options.recheck_seconds;

  c.anonymous = options.anonymous;
  if (c.anonymous) return c;
  auto take = [&](std::optional<std::string> id, std::optional<std::string> secret,
                  std::optional<std::string> token, std::string from) -> Result<bool> {
    if (!id && !secret) return false;
    if (!id || !secret) {
      return Error::AccessDenied(fmt::format("S3 credentials in {}: {} without {}", from,
                                             id ? "an access key id" : "a secret key",
                                             id ? "its secret key" : "an access key id"));
    }
    c.access_key_id = *id;
    c.secret_access_key = *secret;
    c.session_token = token.value_or("");
    c.credentials_from = std::move(from);
    return true;
  };
  auto from_profile = [&]() -> Result<bool> {
    ASSIGN_OR_RETURN(bool got, take(Get(cred_section, "aws_access_key_id"),
                                    Get(cred_section, "aws_secret_access_key"),
                                    Get(cred_section, "aws_session_token"),
                                    fmt::format("profile {} in {}", profile, credentials_path)));
    if (got) return true;
    return take(Get(config_section, "aws_access_key_id"),
                Get(config_section, "aws_secret_access_key"),
                Get(config_section, "aws_session_token"),
                fmt::format("profile {} in {}", profile, config_path));
  };
  bool got = false;
  if (options.profile) {
    ASSIGN_OR_RETURN(got, from_profile());
  } else {
    ASSIGN_OR_RETURN(
        got, take(NonEmpty(env("AWS_ACCESS_KEY_ID")), NonEmpty(env("AWS_SECRET_ACCESS_KEY")),
                  NonEmpty(env("AWS_SESSION_TOKEN")), "the environment"));
    if (!got) {
      ASSIGN_OR_RETURN(got, from_profile());
    }
  }
  if (!got) {
    return Error::AccessDenied(fmt::format(
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile "
        "'{}' keys in {}, or mount with -o s3_anonymous for a public bucket",
        profile, credentials_path));
  }
  return c;
}

Result<S3Config> ResolveS3Config(const S3Options& options) {
  EnvLookup env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  FileReader read = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return ResolveS3Config(options, env, read);
}

}  // namespace tiledbfs::core::s3
