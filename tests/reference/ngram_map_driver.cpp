// llama.cpp's common_ngram_map_begin/_draft/_accept (common/ngram-map.cpp) driven directly,
// for checking tests/test_drafters_ngram_map.py's direct-call cases on the same histories.
//
// args:  size_n size_m key_only(0/1) min_hits
// stdin: one call per line:
//   B t0 t1 ...       begin: the history becomes these tokens
//   D id_last t ...   append the tokens t ... to the history, then draft after id_last
//   A n               accept n
// stdout: one line per D: "L=<history length> draft: <tokens>"
//
// Build like drafter_oracle (tests/conformance/drafters.py), e.g.
//   g++ -O1 -std=c++17 tests/reference/ngram_map_driver.cpp -I $SRC/common -I $SRC/include \
//       -I $SRC/ggml/include -I $SRC/vendor -L build/bin -lllama-common -lllama -lggml \
//       -lggml-base -Wl,-rpath,$PWD/build/bin -o build/bin/ngram_map_driver
#include "ngram-map.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char ** argv) {
    if (argc < 5) { fprintf(stderr, "usage: size_n size_m key_only min_hits\n"); return 1; }
    common_ngram_map map(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]) != 0, atoi(argv[4]));
    llama_tokens hist;
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        char op = 0;
        long long t;
        in >> op;
        if (op == 'B') {
            hist.clear();
            while (in >> t) hist.push_back((llama_token) t);
            common_ngram_map_begin(map, hist);
        } else if (op == 'D') {
            long long id_last;
            in >> id_last;
            while (in >> t) hist.push_back((llama_token) t);
            llama_tokens draft;
            common_ngram_map_draft(map, hist, (llama_token) id_last, draft);
            printf("L=%zu draft:", hist.size());
            for (auto x : draft) printf(" %d", x);
            printf("\n");
        } else if (op == 'A') {
            int n;
            in >> n;
            common_ngram_map_accept(map, (uint16_t) n);
        }
    }
    return 0;
}
