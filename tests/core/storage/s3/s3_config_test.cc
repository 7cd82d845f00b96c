#include "core/storage/s3/s3_config.h"

#include <gtest/gtest.h>

namespace tiledbfs::core::s3 {
namespace {

struct World {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;

  Result<S3Config> Resolve(const S3Options& o = {}) const {
    return ResolveS3Config(
        o,
        [this](const char* n) -> std::optional<std::string> {
          auto it = env.find(n);
          if (it == env.end()) return std::nullopt;
          return it->second;
        },
        [this](const std::string& p) -> std::optional<std::string> {
          auto it = files.find(p);
          if (it == files.end()) return std::nullopt;
          return it->second;
        });
  }
};

void ExpectSettings(const S3Config& c, const std::string& id, const std::string& secret,
                    const std::string& region, const std::string& endpoint) {
  EXPECT_EQ(c.access_key_id, id);
  EXPECT_EQ(c.secret_access_key, secret);
  EXPECT_EQ(c.region, region);
  EXPECT_EQ(c.endpoint, endpoint);
}

TEST(S3ConfigTest, ParseIni) {
  auto ini = ParseIni(
      "# comment\n[default]\naws_access_key_id = AKID \n  nested = skipped\n"
      "; other comment\nREGION=eu-west-1\r\n[profile dev]\nregion = us-west-2\n"
      "s3 =\n  endpoint_url = http://nested\nnot a pair\n[broken\nkey=v\n");
  EXPECT_EQ(ini["default"]["aws_access_key_id"], "AKID");
  EXPECT_EQ(ini["default"]["region"], "eu-west-1");
  EXPECT_EQ(ini["default"].count("nested"), 0u);
  EXPECT_EQ(ini["profile dev"]["region"], "us-west-2");
  EXPECT_EQ(ini["profile dev"]["s3"], "");
  EXPECT_EQ(ini["profile dev"].count("endpoint_url"), 0u);
  // "[broken" is no section header: its key stays with the previous section.
  EXPECT_EQ(ini["profile dev"]["key"], "v");
}

TEST(S3ConfigTest, EnvironmentCredentialsAndAwsDefaults) {
  World w;
  w.env = {{"AWS_ACCESS_KEY_ID", "AKID"},
           {"AWS_SECRET_ACCESS_KEY", "SECRET"},
           {"AWS_SESSION_TOKEN", "TOKEN"},
           {"AWS_DEFAULT_REGION", "eu-central-1"}};
  auto c = w.Resolve();
  ASSERT_TRUE(c.ok()) << c.error().message();
  ExpectSettings(*c, "AKID", "SECRET", "eu-central-1", "https://s3.eu-central-1.amazonaws.com");
  EXPECT_EQ(c->session_token, "TOKEN");
  EXPECT_FALSE(c->custom_endpoint);
  EXPECT_FALSE(c->path_style);  // virtual-hosted on AWS
  EXPECT_EQ(c->parallel, 16u);
  EXPECT_EQ(c->recheck_seconds, 1.0);
  w.env["AWS_REGION"] = "ap-south-1";  // wins over AWS_DEFAULT_REGION
  EXPECT_EQ(w.Resolve()->region, "ap-south-1");
}

TEST(S3ConfigTest, ProfileFilesAndCustomEndpoint) {
  World w;
  w.env = {{"HOME", "/home/u"}, {"AWS_PROFILE", "dev"}};
  w.files["/home/u/.aws/credentials"] =
      "[default]\naws_access_key_id=D\naws_secret_access_key=DS\n"
      "[dev]\naws_access_key_id = DEV\naws_secret_access_key = DEVSECRET\n";
  w.files["/home/u/.aws/config"] =
      "[default]\nregion=us-east-2\n[profile dev]\nregion = eu-west-3\n"
      "endpoint_url = http://127.0.0.1:9000/\n";
  auto c = w.Resolve();
  ASSERT_TRUE(c.ok()) << c.error().message();
  ExpectSettings(*c, "DEV", "DEVSECRET", "eu-west-3", "http://127.0.0.1:9000");
  EXPECT_TRUE(c->path_style);  // path-style with a custom endpoint
  EXPECT_EQ(c->credentials_from, "profile dev in /home/u/.aws/credentials");

  // The environment's keys win over AWS_PROFILE's; -o s3_profile wins over both.
  w.env["AWS_ACCESS_KEY_ID"] = "ENV";
  w.env["AWS_SECRET_ACCESS_KEY"] = "ENVSECRET";
  EXPECT_EQ(w.Resolve()->access_key_id, "ENV");
  S3Options o;
  o.profile = "default";
  auto d = w.Resolve(o);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->access_key_id, "D");
  EXPECT_EQ(d->region, "us-east-2");

  // Options override everything.
  o.endpoint = "https://minio.example:9000";
  o.region = "r1";
  o.path_style = false;
  o.parallel = 4;
  o.recheck_seconds = 0.5;
  auto e = w.Resolve(o);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->endpoint, "https://minio.example:9000");
  EXPECT_EQ(e->region, "r1");
  EXPECT_FALSE(e->path_style);
  EXPECT_EQ(e->parallel, 4u);
  EXPECT_EQ(e->recheck_seconds, 0.5);
}

TEST(S3ConfigTest, EndpointFromEnvironment) {
  World w;
  w.env = {{"AWS_ACCESS_KEY_ID", "A"},
           {"AWS_SECRET_ACCESS_KEY", "S"},
           {"AWS_ENDPOINT_URL", "http://localhost:4568"}};
  EXPECT_EQ(w.Resolve()->endpoint, "http://localhost:4568");
  w.env["AWS_ENDPOINT_URL_S3"] = "http://s3only:1";
  EXPECT_EQ(w.Resolve()->endpoint, "http://s3only:1");
}

TEST(S3ConfigTest, Errors) {
  World w;
  w.env = {{"HOME", "/h"}};
  auto none = w.Resolve();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kAccessDenied);
  EXPECT_NE(none.error().message().find("s3_anonymous"), std::string::npos);
  S3Options anon;
  anon.anonymous = true;
  EXPECT_TRUE(w.Resolve(anon).ok());

  w.env["AWS_SECRET_ACCESS_KEY"] = "TOPSECRET";
  auto half = w.Resolve();
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.error().code(), ErrorCode::kAccessDenied);
  EXPECT_EQ(half.error().message().find("TOPSECRET"), std::string::npos);

  S3Options missing;
  missing.profile = "nope";
  auto m = w.Resolve(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kInvalidArgument);

  w.env["AWS_ACCESS_KEY_ID"] = "A";
  S3Options bad;
  bad.endpoint = "ftp://x";
  EXPECT_EQ(w.Resolve(bad).error().code(), ErrorCode::kInvalidArgument);
  bad.endpoint = "http://x/path";
  EXPECT_EQ(w.Resolve(bad).error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tiledbfs::core::s3
