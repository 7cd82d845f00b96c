#include "fusefs/render/npy.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace tiledbfs::fusefs {
namespace {

using core::Datatype;

// numpy.lib.format: ARRAY_ALIGN and GROWTH_AXIS_MAX_DIGITS.
constexpr size_t kAlign = 64;
constexpr size_t kGrowthAxisDigits = 21;
constexpr size_t kPrefix = 10;  // magic (6), version (2), HEADER_LEN (2)

std::string IntDescr(Datatype t) {
  switch (t) {
    case Datatype::kInt8:
      return "|i1";
    case Datatype::kUInt8:
      return "|u1";
    case Datatype::kInt16:
      return "<i2";
    case Datatype::kUInt16:
      return "<u2";
    case Datatype::kInt32:
      return "<i4";
    case Datatype::kUInt32:
      return "<u4";
    case Datatype::kInt64:
      return "<i8";
    case Datatype::kUInt64:
      return "<u8";
    case Datatype::kFloat32:
      return "<f4";
    case Datatype::kFloat64:
      return "<f8";
    case Datatype::kBool:
      return "|b1";
    default:
      return "";
  }
}

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

core::Result<NpyDtype> NpyDtypeFor(Datatype t, uint32_t k) {
  if (k == core::kVarNum) {
    return core::Error::InvalidArgument(
        fmt::format("no .npy for a var-sized {} field", core::DatatypeName(t)));
  }
  if (k == 0) return core::Error::InvalidArgument("no .npy for a field with cell_val_num 0");
  uint32_t axis = k > 1 ? k : 0;
  switch (t) {
    case Datatype::kChar:
    case Datatype::kStringAscii:
    case Datatype::kStringUtf8:
      return NpyDtype{fmt::format("|S{}", k), k, 0};
    case Datatype::kStringUtf32:
    case Datatype::kStringUcs4:
      return NpyDtype{fmt::format("<U{}", k), uint64_t{4} * k, 0};
    case Datatype::kStringUtf16:
    case Datatype::kStringUcs2:
      return NpyDtype{"<u2", 2, axis};
    case Datatype::kBlob:
    case Datatype::kGeomWkb:
    case Datatype::kGeomWkt:
    case Datatype::kAny:
      return NpyDtype{"|u1", 1, axis};
    default:
      break;
  }
  if (core::IsDatetime(t)) return NpyDtype{fmt::format("<M8[{}]", core::TimeUnit(t)), 8, axis};
  if (core::IsTime(t)) return NpyDtype{fmt::format("<m8[{}]", core::TimeUnit(t)), 8, axis};
  std::string descr = IntDescr(t);
  if (descr.empty()) {
    return core::Error::InvalidArgument(fmt::format("no .npy dtype for {}", core::DatatypeName(t)));
  }
  return NpyDtype{descr, core::DatatypeSize(t), axis};
}

core::Result<NpyFile> MakeNpyFile(Datatype t, uint32_t cell_val_num,
                                  std::span<const uint64_t> cell_shape) {
  ASSIGN_OR_RETURN(NpyDtype dtype, NpyDtypeFor(t, cell_val_num));
  if (cell_shape.empty()) return core::Error::InvalidArgument("no .npy for an empty shape");
  std::vector<uint64_t> shape(cell_shape.begin(), cell_shape.end());
  if (dtype.last_axis != 0) shape.push_back(dtype.last_axis);

  uint64_t elements = 1;
  for (uint64_t e : shape) {
    if (MulOverflows(elements, e, &elements)) {
      return core::Error::OutOfMemory(".npy element count overflows 64 bits");
    }
  }
  uint64_t data_size = 0;
  if (MulOverflows(elements, dtype.item_size, &data_size)) {
    return core::Error::OutOfMemory(".npy data size overflows 64 bits");
  }

  // repr() of a Python tuple of ints: "(5,)", "(3, 4)".
  std::string shape_text = "(";
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k > 0) shape_text += ", ";
    shape_text += std::to_string(shape[k]);
  }
  if (shape.size() == 1) shape_text += ',';
  shape_text += ')';

  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 dtype.descr, shape_text);
  size_t first_axis_digits = std::to_string(shape[0]).size();
  if (first_axis_digits < kGrowthAxisDigits)
    dict.append(kGrowthAxisDigits - first_axis_digits, ' ');
  size_t hlen = dict.size() + 1;                    // + the final '\n'
  size_t pad = kAlign - (kPrefix + hlen) % kAlign;  // 64 when already aligned, as numpy does
  size_t header_len = hlen + pad;
  if (header_len > 0xFFFF) {
    return core::Error::Unsupported(
        fmt::format(".npy header of {} bytes does not fit format 1.0", header_len));
  }

  NpyFile file;
  file.header.reserve(kPrefix + header_len);
  file.header.append("\x93NUMPY", 6);
  file.header += static_cast<char>(1);
  file.header += static_cast<char>(0);
  file.header += static_cast<char>(header_len & 0xFF);
  file.header += static_cast<char>(header_len >> 8);
  file.header += dict;
  file.header.append(pad, ' ');
  file.header += '\n';
  file.data_size = data_size;
  return file;
}

}  // namespace tiledbfs::fusefs
