// Iteration order of std::unordered_map<int32_t, int32_t> (llama.cpp's common_ngram_cache_part)
// under this compiler's standard library, to check SpecScope's emulation of it
// (core/drafters/ngram_cache.py: Followers; tests/test_drafters_ngram_mod_cache.py).
//
// stdin: one sequence per line, token ids inserted in order (a repeated id increments its count,
//        as common_ngram_cache_update does)
// stdout: per line "<bucket_count> : <key>=<count> ..." in iteration order, of a copy of the map
//         (llama.cpp's try_draft iterates a copy)
// Build: g++ -O2 -std=c++17 tests/reference/umap_order.cpp -o /tmp/umap_order
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::unordered_map<int32_t, int32_t> m;
        std::istringstream in(line);
        int32_t t;
        while (in >> t) {
            auto it = m.find(t);
            if (it == m.end()) m.emplace(t, 1); else it->second++;
        }
        const std::unordered_map<int32_t, int32_t> copy = m;
        printf("%zu :", copy.bucket_count());
        for (const auto & kv : copy) printf(" %d=%d", kv.first, kv.second);
        printf("\n");
    }
    return 0;
}
