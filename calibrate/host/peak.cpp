// Vendor dense (non-sparse) BF16 Tensor Core peaks by device name, as CUDA reports the name
// (cudaDeviceProp::name: "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA L40S").
// Figures from the vendors' datasheets and architecture whitepapers (FP32 accumulate where
// GeForce boards differ); libmemest/data/gpus.json uses the same ones for its presets.
#include <cctype>

#include "calibrate.hpp"

namespace memest_calibrate {

const std::vector<PeakEntry>& peak_table() {
  // Most specific first: "H100 PCIe" before "H100", "GH200" is its own token, "A10" does not
  // match "A100" (tokens are compared whole).
  static const std::vector<PeakEntry> table = {
      {{"H100", "PCIE"}, 756, nullptr, 0, "H100 PCIe"},
      {{"H100", "NVL"}, 835, nullptr, 0, "H100 NVL"},
      {{"H100"}, 989, "h100-80gb", 0, "H100 SXM"},
      {{"H800"}, 989, nullptr, 0, "H800 SXM"},
      {{"GH200"}, 989, nullptr, 0, "GH200"},
      {{"H200", "NVL"}, 835, nullptr, 0, "H200 NVL"},
      {{"H200"}, 989, "h200-141gb", 0, "H200 SXM"},
      {{"H20"}, 148, nullptr, 0, "H20"},
      {{"GB200"}, 2500, nullptr, 0, "GB200"},
      {{"B200"}, 2250, "b200-180gb", 0, "B200"},
      {{"B100"}, 1750, nullptr, 0, "B100"},
      {{"A100", "PCIE"}, 312, nullptr, 0, "A100 PCIe"},
      {{"A100"}, 312, "a100-40gb", 48, "A100 SXM 40GB"},
      {{"A100"}, 312, "a100-80gb", 0, "A100 SXM 80GB"},
      {{"A800"}, 312, nullptr, 0, "A800"},
      {{"A30"}, 165, nullptr, 0, "A30"},
      {{"A40"}, 150, nullptr, 0, "A40"},
      {{"A10G"}, 70, "a10g-24gb", 0, "A10G"},
      {{"A10"}, 125, nullptr, 0, "A10"},
      {{"L40S"}, 362, nullptr, 0, "L40S"},
      {{"L40"}, 181, nullptr, 0, "L40"},
      {{"L4"}, 121, "l4-24gb", 0, "L4"},
      {{"RTX", "6000", "ADA"}, 364, nullptr, 0, "RTX 6000 Ada"},
      {{"RTX", "A6000"}, 155, nullptr, 0, "RTX A6000"},
      {{"RTX", "4090"}, 165, "rtx4090-24gb", 0, "GeForce RTX 4090"},
      {{"RTX", "3090"}, 71, nullptr, 0, "GeForce RTX 3090"},
  };
  return table;
}

std::vector<std::string> name_tokens(const std::string& name) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) {
      cur += static_cast<char>(std::toupper(c));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

const PeakEntry* find_peak(const std::string& device_name, double memory_gib) {
  const std::vector<std::string> have = name_tokens(device_name);
  for (const PeakEntry& e : peak_table()) {
    if (e.max_gib > 0 && memory_gib > e.max_gib) continue;
    bool all = true;
    for (const std::string& t : e.tokens) {
      bool found = false;
      for (const std::string& h : have) found = found || h == t;
      all = all && found;
    }
    if (all) return &e;
  }
  return nullptr;
}

}  // namespace memest_calibrate
