// safetensors reading and writing (core/model/safetensors_*.h): round trips of every dtype,
// the byte layout checked against the format's description by hand, malformed files each
// refused with their own message naming the file and the tensor, and the writer's checks and
// atomic replacement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/model/convert_to_f32.h"
#include "core/model/safetensors_error.h"
#include "core/model/safetensors_file.h"
#include "core/model/safetensors_writer.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

// A fresh directory under /tmp, unique per process and test, removed at the end.
struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() /
          ("mt_safetensors_test_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

std::vector<std::byte> to_bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

void append_u64_le(std::vector<std::byte>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
}

// A file made by hand: `declared` as the header length (the JSON's own length by default),
// the JSON text, then `data_bytes` bytes of data.
std::vector<std::byte> raw_file(std::string_view json, size_t data_bytes,
                                std::optional<uint64_t> declared = std::nullopt) {
  std::vector<std::byte> out;
  append_u64_le(out, declared ? *declared : json.size());
  auto text = to_bytes(json);
  out.insert(out.end(), text.begin(), text.end());
  for (size_t i = 0; i < data_bytes; ++i)
    out.push_back(static_cast<std::byte>(i * 7 + 1));
  return out;
}

void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return to_bytes(s);
}

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out)
    b = static_cast<std::byte>(rng() & 0xFF);
  return out;
}

const std::vector<SafetensorsDtype>& all_dtypes() {
  using D = SafetensorsDtype;
  static const std::vector<D> dtypes = {D::BOOL, D::U8,  D::I8,  D::F8_E5M2, D::F8_E4M3, D::F8_E8M0,
                                        D::I16,  D::U16, D::F16, D::BF16,    D::I32,     D::U32,
                                        D::F32,  D::C64, D::F64, D::I64,     D::U64};
  return dtypes;
}

// ---- round trips --------------------------------------------------------------------------

TEST(Safetensors, RoundTripsEveryDtype) {
  TempDir tmp;
  // Per dtype: a matrix, a scalar and an empty tensor, with random contents.
  std::vector<std::vector<std::byte>> storage;
  std::vector<SafetensorsTensor> tensors;
  uint32_t seed = 1;
  for (SafetensorsDtype t : all_dtypes()) {
    const std::string base = std::string("layer.") + to_string(t);
    for (const auto& [suffix, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {".weight", {3, 5}}, {".scalar", {}}, {".empty", {4, 0, 2}}}) {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      storage.push_back(random_bytes(static_cast<size_t>(n) * item_size(t), seed++));
      tensors.push_back({base + suffix, t, shape, storage.back()});
    }
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "ünïcode ✓"}};
  const std::string path = tmp.file("all.safetensors");
  write_safetensors(path, tensors, metadata);

  SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.metadata(), metadata);
  ASSERT_EQ(f.tensors().size(), tensors.size());
  EXPECT_EQ(f.header().header_size % 8, 0u);
  for (const SafetensorsTensor& t : tensors) {
    SCOPED_TRACE(t.name);
    const SafetensorsTensorInfo& info = f.info(t.name);
    EXPECT_EQ(info.dtype, t.dtype);
    EXPECT_EQ(info.shape, t.shape);
    EXPECT_EQ(info.num_elements * static_cast<int64_t>(item_size(t.dtype)),
              static_cast<int64_t>(t.data.size()));
    std::span<const std::byte> got = f.bytes(t.name);
    ASSERT_EQ(got.size(), t.data.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), t.data.begin()));
    // The reference layout aligns every tensor to its element size in the file.
    EXPECT_EQ((f.header().data_start() + info.begin) % item_size(t.dtype), 0u);
  }
  // Reading back gives the same file when written again (the layout is deterministic).
  std::vector<SafetensorsTensor> again;
  for (const SafetensorsTensorInfo& info : f.tensors())
    again.push_back({info.name, info.dtype, info.shape, f.bytes(info.name)});
  EXPECT_EQ(serialize_safetensors(again, f.metadata()), read_file(path));
}

TEST(Safetensors, ConvertsHuggingFaceNamedWeightsToF32) {
  TempDir tmp;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> query(64 * 48);
  for (float& v : query)
    v = normal(rng);
  std::vector<uint16_t> bias_bf16(48), ln_f16(64);
  for (auto& v : bias_bf16)
    v = static_cast<uint16_t>(rng());
  for (auto& v : ln_f16)
    v = static_cast<uint16_t>(rng());
  std::vector<double> pos(16);
  for (double& v : pos)
    v = std::ldexp(normal(rng), static_cast<int>(rng() % 300) - 150);
  std::vector<int64_t> ids = {0, 1, -5, int64_t{1} << 40, -(int64_t{3} << 61)};

  const std::vector<SafetensorsTensor> tensors = {
      {"bert.encoder.layer.0.attention.self.query.weight",
       SafetensorsDtype::F32,
       {64, 48},
       std::as_bytes(std::span(query))},
      {"bert.encoder.layer.0.attention.self.query.bias",
       SafetensorsDtype::BF16,
       {48},
       std::as_bytes(std::span(bias_bf16))},
      {"bert.embeddings.LayerNorm.weight",
       SafetensorsDtype::F16,
       {64},
       std::as_bytes(std::span(ln_f16))},
      {"bert.embeddings.position_scale",
       SafetensorsDtype::F64,
       {4, 4},
       std::as_bytes(std::span(pos))},
      {"bert.embeddings.position_ids",
       SafetensorsDtype::I64,
       {1, 5},
       std::as_bytes(std::span(ids))},
  };
  const std::string path = tmp.file("model.safetensors");
  write_safetensors(path, tensors);
  SafetensorsFile f = SafetensorsFile::open(path);

  // F32 is viewed in place: the span points into the mapping.
  std::span<const float> view = f.f32_view("bert.encoder.layer.0.attention.self.query.weight");
  EXPECT_EQ(
      static_cast<const void*>(view.data()),
      static_cast<const void*>(f.bytes("bert.encoder.layer.0.attention.self.query.weight").data()));
  ASSERT_EQ(view.size(), query.size());
  for (size_t i = 0; i < query.size(); ++i)
    ASSERT_EQ(view[i], query[i]) << i;
  EXPECT_EQ(f.to_f32("bert.encoder.layer.0.attention.self.query.weight"), query);

  std::vector<float> bias = f.to_f32("bert.encoder.layer.0.attention.self.query.bias");
  for (size_t i = 0; i < bias.size(); ++i) {
    // bf16 is the upper half of an f32's bits.
    uint32_t bits = static_cast<uint32_t>(bias_bf16[i]) << 16;
    float expected;
    std::memcpy(&expected, &bits, 4);
    if (std::isnan(expected))
      EXPECT_TRUE(std::isnan(bias[i])) << i;
    else
      EXPECT_EQ(bias[i], expected) << i;
  }
  std::vector<float> ln(64);
  f.to_f32("bert.embeddings.LayerNorm.weight", ln); // into an existing buffer
  for (size_t i = 0; i < ln.size(); ++i) {
    // A plain decode of the half-precision fields, in double.
    const int e = (ln_f16[i] >> 10) & 31, m = ln_f16[i] & 1023;
    const double sign = (ln_f16[i] & 0x8000) ? -1.0 : 1.0;
    if (e == 31) {
      EXPECT_TRUE(m ? std::isnan(ln[i]) : ln[i] == sign * INFINITY) << i;
      continue;
    }
    const double expected =
        e == 0 ? sign * m * std::pow(2.0, -24) : sign * (1.0 + m / 1024.0) * std::pow(2.0, e - 15);
    EXPECT_EQ(static_cast<double>(ln[i]), expected) << i;
  }
  std::vector<float> narrowed = f.to_f32("bert.embeddings.position_scale");
  for (size_t i = 0; i < pos.size(); ++i) {
    // Round to nearest: no f32 neighbour of the result is closer to the double.
    const float r = narrowed[i];
    if (std::isinf(r)) {
      EXPECT_GT(std::fabs(pos[i]), static_cast<double>(std::numeric_limits<float>::max())) << i;
      continue;
    }
    const double err = std::fabs(static_cast<double>(r) - pos[i]);
    EXPECT_LE(err, std::fabs(static_cast<double>(std::nextafter(r, INFINITY)) - pos[i])) << i;
    EXPECT_LE(err, std::fabs(static_cast<double>(std::nextafter(r, -INFINITY)) - pos[i])) << i;
  }
  std::vector<float> id_values = f.to_f32("bert.embeddings.position_ids");
  ASSERT_EQ(id_values.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(static_cast<long double>(id_values[i]), static_cast<long double>(ids[i])) << i;
}

// ---- the byte layout, against the format's description --------------------------------------

TEST(Safetensors, ByteLayoutFollowsTheSpec) {
  // Two tensors and metadata. The spec: 8 bytes of little-endian u64 N, N bytes of JSON, the
  // data. The reference writer emits compact JSON with "__metadata__" first, the tensors by
  // decreasing alignment then name ("a", an I8, comes after "attn.0", an F32), and pads N
  // to a multiple of 8 with spaces.
  const std::vector<float> attn = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  const std::vector<int8_t> a = {-1, 2, -3};
  const std::vector<SafetensorsTensor> tensors = {
      {"a", SafetensorsDtype::I8, {3}, std::as_bytes(std::span(a))},
      {"attn.0", SafetensorsDtype::F32, {1, 2, 3}, std::as_bytes(std::span(attn))},
  };
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"},"
                     "\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]},"
                     "\"a\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[24,27]}}";
  while (json.size() % 8)
    json += ' ';
  std::vector<std::byte> expected;
  append_u64_le(expected, json.size());
  for (char c : json)
    expected.push_back(static_cast<std::byte>(c));
  for (float v : attn) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int i = 0; i < 4; ++i)
      expected.push_back(static_cast<std::byte>((bits >> (8 * i)) & 0xFF));
  }
  for (int8_t v : a)
    expected.push_back(static_cast<std::byte>(static_cast<uint8_t>(v)));

  EXPECT_EQ(serialize_safetensors(tensors, {{"format", "pt"}}), expected);

  // An empty file: "{}" padded to 8.
  std::vector<std::byte> empty;
  append_u64_le(empty, 8);
  for (char c : std::string("{}      "))
    empty.push_back(static_cast<std::byte>(c));
  EXPECT_EQ(serialize_safetensors({}), empty);
}

// ---- what the spec allows ---------------------------------------------------------------

TEST(Safetensors, AcceptsWhatTheSpecAllows) {
  TempDir tmp;
  const std::string path = tmp.file("ok.safetensors");
  // Keys in any order, offsets not in key order, zero-size tensors sharing an offset,
  // a scalar, whitespace around the JSON, a field the format may add, null metadata.
  write_file(path, raw_file(" \n{\"z\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"a\":{\"shape\":[],\"data_offsets\":[8,10],\"dtype\":\"F16\"},"
                            "\"e1\":{\"dtype\":\"I64\",\"shape\":[0,3],\"data_offsets\":[8,8]},"
                            "\"e2\":{\"dtype\":\"U8\",\"shape\":[5,0],\"data_offsets\":[10,10],"
                            "\"future\":[1,{\"x\":2}]},"
                            "\"__metadata__\":null}   ",
                            10));
  SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ((std::vector<std::string>{"z", "e1", "a", "e2"}), f.names());
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_EQ(f.info("a").num_elements, 1);
  EXPECT_TRUE(f.info("a").shape.empty());
  EXPECT_EQ(f.info("e1").num_elements, 0);
  EXPECT_TRUE(f.to_f32("e2").empty());
  EXPECT_EQ(f.bytes("a").size(), 2u);

  // No tensors at all.
  write_file(path, raw_file("{}", 0));
  EXPECT_TRUE(SafetensorsFile::open(path).tensors().empty());
}

// ---- malformed files ----------------------------------------------------------------------

struct Malformed {
  const char* what;
  std::vector<std::byte> bytes;
  std::string tensor;  // the tensor the error must name ("" for none)
  std::string message; // a part of the message that says what is wrong
};

std::vector<Malformed> malformed_files() {
  const auto entry = [](const std::string& dtype, const std::string& shape,
                        const std::string& offsets) {
    return "{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
  };
  const std::string ok_a = "\"a\":" + entry("\"F32\"", "[4]", "[0,16]");
  std::vector<Malformed> m;
  m.push_back({"empty file", {}, "", "the file is 0 bytes, shorter than the 8-byte header length"});
  m.push_back({"zero header length", raw_file("", 0, 0), "", "the header is empty"});
  {
    auto five = raw_file("", 0, 0);
    five.resize(5);
    m.push_back({"5-byte file", five, "", "the file is 5 bytes, shorter than the 8-byte"});
  }
  m.push_back({"header length beyond the file", raw_file("{" + ok_a + "}", 16, 1000), "",
               "header length 1000 bytes runs past the end of the file"});
  {
    // A header cut off in the middle: the length is right, the file is not.
    auto cut = raw_file("{" + ok_a + "}", 16);
    cut.resize(30);
    m.push_back({"truncated header", cut, "", "runs past the end of the file (30 bytes"});
  }
  {
    // The data buffer cut short: the last tensor no longer fits.
    auto cut = raw_file("{" + ok_a + "}", 16);
    cut.resize(cut.size() - 4);
    m.push_back({"truncated data", cut, "a",
                 "data_offsets [0, 16] run past the end of the data buffer (12 bytes"});
  }
  m.push_back({"header length above 100 MB", raw_file("{}", 0, 200'000'000), "",
               "header length 200000000 bytes exceeds the limit of 100000000"});
  m.push_back(
      {"lying header length 2^64-1", raw_file("{}", 0, ~uint64_t{0}), "", "exceeds the limit"});
  m.push_back({"not JSON", raw_file("this is no JSON", 0), "", "the header is not valid JSON"});
  m.push_back(
      {"JSON followed by garbage", raw_file("{}{}", 0), "", "the header is not valid JSON"});
  m.push_back({"invalid UTF-8", raw_file("{\"\xFF\":1}", 0), "",
               "not valid UTF-8 (ill-formed byte 0xFF at offset 2 of the header)"});
  m.push_back(
      {"root is an array", raw_file("[1,2]", 0), "", "the header is an array, not a JSON object"});
  m.push_back({"entry is not an object", raw_file("{\"w\":3}", 0), "w",
               "the entry is the integer 3, not an object"});
  m.push_back({"missing dtype", raw_file("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4), "w",
               "missing \"dtype\""});
  m.push_back({"missing data_offsets", raw_file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4),
               "w", "missing \"data_offsets\""});
  m.push_back({"dtype not a string", raw_file("{\"w\":" + entry("32", "[1]", "[0,4]") + "}", 4),
               "w", "dtype is the integer 32, not a string"});
  m.push_back({"unknown dtype", raw_file("{\"w\":" + entry("\"F33\"", "[1]", "[0,4]") + "}", 4),
               "w", "unknown dtype \"F33\"; supported: BOOL"});
  m.push_back({"sub-byte dtype", raw_file("{\"w\":" + entry("\"F4\"", "[2]", "[0,1]") + "}", 1),
               "w", "dtype 'F4' (a sub-byte type) is not supported"});
  m.push_back({"shape not an array",
               raw_file("{\"w\":" + entry("\"F32\"", "4", "[0,16]") + "}", 16), "w",
               "shape is the integer 4, not an array of dimensions"});
  m.push_back({"negative dimension",
               raw_file("{\"w\":" + entry("\"F32\"", "[2,-2]", "[0,16]") + "}", 16), "w",
               "shape[1] is -2, negative"});
  m.push_back({"fractional dimension",
               raw_file("{\"w\":" + entry("\"F32\"", "[2.5]", "[0,10]") + "}", 10), "w",
               "shape[0] is the number 2.5, not a non-negative integer"});
  m.push_back({"dimension above 2^63",
               raw_file("{\"w\":" + entry("\"U8\"", "[9223372036854775808,0]", "[0,0]") + "}", 0),
               "w", "shape[0] is 9223372036854775808, above the largest supported"});
  m.push_back({"shape product overflows",
               raw_file("{\"w\":" + entry("\"U8\"", "[4294967296,4294967296,0]", "[0,0]") + "}", 0),
               "w", "has more elements than 2^64 (the product overflows)"});
  m.push_back({"size overflows",
               raw_file("{\"w\":" + entry("\"F64\"", "[4611686018427387904]", "[0,8]") + "}", 8),
               "w", "of F64 needs more than 2^64 bytes (the size overflows)"});
  m.push_back({"size does not match the shape",
               raw_file("{\"w\":" + entry("\"F32\"", "[2,2]", "[0,8]") + "}", 8), "w",
               "data_offsets [0, 8] hold 8 bytes, but shape [2, 2] of F32 needs 16 (4 x 4)"});
  m.push_back({"data_offsets not a pair",
               raw_file("{\"w\":" + entry("\"F32\"", "[1]", "[0,4,8]") + "}", 8), "w",
               "data_offsets is [0,4,8], not [begin, end]"});
  m.push_back({"negative offset", raw_file("{\"w\":" + entry("\"F32\"", "[1]", "[-4,0]") + "}", 4),
               "w", "data_offsets[0] is -4, negative"});
  m.push_back({"offsets reversed", raw_file("{\"w\":" + entry("\"F32\"", "[1]", "[8,4]") + "}", 8),
               "w", "data_offsets [8, 4] end before they begin"});
  m.push_back({"offsets out of range",
               raw_file("{" + ok_a + ",\"b\":" + entry("\"F32\"", "[2]", "[16,24]") + "}", 16), "b",
               "data_offsets [16, 24] run past the end of the data buffer (16 bytes"});
  m.push_back({"overlapping tensors",
               raw_file("{" + ok_a + ",\"b\":" + entry("\"F32\"", "[2]", "[8,16]") + "}", 16), "b",
               "data_offsets [8, 16] overlap those of tensor 'a' [0, 16]"});
  m.push_back({"hole between tensors",
               raw_file("{" + ok_a + ",\"b\":" + entry("\"F32\"", "[2]", "[24,32]") + "}", 32), "b",
               "bytes [16, 24) of the data buffer before it (data_offsets [24, 32]) belong to no "
               "tensor (after tensor 'a')"});
  m.push_back({"hole at the start",
               raw_file("{\"b\":" + entry("\"F32\"", "[2]", "[8,16]") + "}", 16), "b",
               "bytes [0, 8) of the data buffer before it"});
  m.push_back({"bytes after the last tensor", raw_file("{" + ok_a + "}", 24), "",
               "the data buffer is 24 bytes, but the tensors cover only 16 (the last, 'a', ends "
               "there): 8 bytes at the end belong to no tensor"});
  m.push_back({"duplicate tensor name",
               raw_file("{" + ok_a + ",\"a\":" + entry("\"F32\"", "[4]", "[16,32]") + "}", 32), "a",
               "the name appears twice in the header"});
  m.push_back({"duplicate key in an entry",
               raw_file("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],"
                        "\"data_offsets\":[0,4]}}",
                        4),
               "w", "duplicate key 'dtype'"});
  m.push_back({"duplicate metadata key",
               raw_file("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0), "",
               "__metadata__: duplicate key 'k'"});
  m.push_back({"non-string metadata", raw_file("{\"__metadata__\":{\"n\":1}}", 0), "",
               "__metadata__ 'n' is the integer 1, not a string"});
  m.push_back({"metadata not an object", raw_file("{\"__metadata__\":[\"a\"]}", 0), "",
               "__metadata__ is an array, not an object of strings"});
  m.push_back({"deep nesting",
               raw_file("{\"w\":" + std::string(100, '[') + std::string(100, ']') + "}", 0), "",
               "header nests JSON deeper than 64 levels"});
  return m;
}

TEST(Safetensors, RefusesMalformedFilesNamingFileAndTensor) {
  TempDir tmp;
  const std::vector<Malformed> cases = malformed_files();
  ASSERT_GE(cases.size(), 15u);
  int index = 0;
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string path = tmp.file("bad" + std::to_string(index++) + ".safetensors");
    write_file(path, c.bytes);
    try {
      SafetensorsFile::open(path);
      ADD_FAILURE() << "accepted";
    } catch (const SafetensorsError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.path(), path);
      EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
      EXPECT_EQ(e.tensor(), c.tensor) << msg;
      if (!c.tensor.empty()) {
        EXPECT_NE(msg.find("tensor '" + c.tensor + "'"), std::string::npos) << msg;
      }
      EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    }
    // The parser on its own gives the same verdict for the bytes in memory.
    EXPECT_THROW(parse_safetensors_header(c.bytes, "<memory>"), SafetensorsError);
  }
}

TEST(Safetensors, RefusesFilesThatCannotBeMapped) {
  TempDir tmp;
  const std::string missing = tmp.file("missing.safetensors");
  try {
    SafetensorsFile::open(missing);
    ADD_FAILURE() << "opened a missing file";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.path(), missing);
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
  try {
    SafetensorsFile::open(tmp.dir.string());
    ADD_FAILURE() << "opened a directory";
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
}

// ---- access errors --------------------------------------------------------------------

TEST(Safetensors, AccessErrorsNameTheTensor) {
  TempDir tmp;
  const std::vector<float> w(6, 1.5f);
  const std::vector<float> c(4, 2.0f); // two complex64 values
  const std::string path = tmp.file("m.safetensors");
  write_safetensors(
      path, std::vector<SafetensorsTensor>{
                {"encoder.weight", SafetensorsDtype::F32, {2, 3}, std::as_bytes(std::span(w))},
                {"rotary", SafetensorsDtype::C64, {2}, std::as_bytes(std::span(c))},
            });
  SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.find("encoder.wieght"), nullptr);
  try {
    f.info("encoder.wieght");
    ADD_FAILURE();
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.tensor(), "encoder.wieght");
    EXPECT_NE(std::string(e.what()).find("no such tensor in the file (2 tensors) (did you mean "
                                         "'encoder.weight'?)"),
              std::string::npos)
        << e.what();
  }
  std::vector<float> small(5);
  try {
    f.to_f32("encoder.weight", small);
    ADD_FAILURE();
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("to_f32 into 5 floats, but it has 6 elements"),
              std::string::npos)
        << e.what();
  }
  try {
    f.to_f32("rotary");
    ADD_FAILURE();
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.tensor(), "rotary");
    EXPECT_NE(std::string(e.what()).find("dtype C64 does not convert to f32"), std::string::npos);
  }
  EXPECT_THROW(f.f32_view("rotary"), SafetensorsError);
}

TEST(Safetensors, UnalignedF32IsConvertedNotViewed) {
  // A writer that does not pad: header length 61, data at file offset 69.
  TempDir tmp;
  const std::string json = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  std::vector<std::byte> bytes;
  append_u64_le(bytes, json.size());
  for (char ch : json)
    bytes.push_back(static_cast<std::byte>(ch));
  const std::vector<float> values = {3.25f, -0.5f};
  const auto* raw = reinterpret_cast<const std::byte*>(values.data());
  bytes.insert(bytes.end(), raw, raw + 8);
  ASSERT_NE((8 + json.size()) % 4, 0u);
  const std::string path = tmp.file("unaligned.safetensors");
  write_file(path, bytes);
  SafetensorsFile f = SafetensorsFile::open(path);
  try {
    f.f32_view("w");
    ADD_FAILURE();
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("not 4-byte aligned"), std::string::npos) << e.what();
  }
  EXPECT_EQ(f.to_f32("w"), values);
}

// ---- the writer -----------------------------------------------------------------------

TEST(Safetensors, WriterRefusesBadTensors) {
  TempDir tmp;
  const std::string path = tmp.file("w.safetensors");
  const std::vector<float> four(4, 0.0f);
  const auto data = std::as_bytes(std::span(four));
  struct Case {
    std::vector<SafetensorsTensor> tensors;
    std::string tensor, message;
  };
  const std::vector<Case> cases = {
      {{{"x", SafetensorsDtype::F32, {4}, data}, {"x", SafetensorsDtype::F32, {2, 2}, data}},
       "x",
       "two tensors have this name"},
      {{{"__metadata__", SafetensorsDtype::F32, {4}, data}}, "__metadata__", "reserved"},
      {{{"x", SafetensorsDtype::F32, {-4}, data}}, "x", "shape[0] is -4, negative"},
      {{{"x", SafetensorsDtype::F32, {3}, data}},
       "x",
       "16 bytes of data, but 3 elements of F32 need 12"},
      {{{"bad\xC3", SafetensorsDtype::F32, {4}, data}}, "bad\xC3", "the name is not valid UTF-8"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    try {
      write_safetensors(path, c.tensors);
      ADD_FAILURE() << "written";
    } catch (const SafetensorsError& e) {
      EXPECT_EQ(e.path(), path);
      EXPECT_EQ(e.tensor(), c.tensor);
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(path));
  }
  EXPECT_THROW(write_safetensors(path, {}, {{"k", "\xFF"}}), SafetensorsError);
  EXPECT_TRUE(fs::is_empty(tmp.dir)); // nothing left behind, not even a temporary file
}

TEST(Safetensors, WriterReplacesTheFileAtomically) {
  TempDir tmp;
  const std::string path = tmp.file("model.safetensors");
  const std::vector<float> v1(8, 1.0f), v2(3, 2.0f);
  write_safetensors(path, std::vector<SafetensorsTensor>{
                              {"w", SafetensorsDtype::F32, {8}, std::as_bytes(std::span(v1))}});
  const std::vector<std::byte> first = read_file(path);

  // A write that fails after its temporary file is complete (the rename cannot replace a
  // folder) leaves neither a partial file nor the temporary one.
  const std::string folder = tmp.file("taken");
  fs::create_directories(folder + "/inside");
  EXPECT_THROW(
      write_safetensors(folder,
                        std::vector<SafetensorsTensor>{
                            {"w", SafetensorsDtype::F32, {3}, std::as_bytes(std::span(v2))}}),
      SafetensorsError);
  EXPECT_TRUE(fs::is_directory(folder));
  // A write into a folder that does not exist fails before anything is created.
  EXPECT_THROW(write_safetensors(tmp.file("no/such/folder.safetensors"), {}), SafetensorsError);

  // A successful write replaces the old file whole.
  write_safetensors(path, std::vector<SafetensorsTensor>{
                              {"w", SafetensorsDtype::F32, {3}, std::as_bytes(std::span(v2))}});
  EXPECT_NE(read_file(path), first);
  EXPECT_EQ(SafetensorsFile::open(path).to_f32("w"), v2);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp.dir))
    left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"model.safetensors", "taken"}));
}

} // namespace
} // namespace mt
