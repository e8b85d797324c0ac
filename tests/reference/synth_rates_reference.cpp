// llama.cpp's common_speculative_synth_rates_resolve, for tests/data/synth_rates_golden.json.
//
// stdin:  one case a line, "LEN N_MAX R0,R1,..." (the rates "-" for none)
// stdout: one line a case, "ok R0 R1 ..." (%.17g) or "error: MESSAGE"
//
// Build (never committed as a binary), with V the vendored llama.cpp and the reference build:
//   g++ -std=c++17 -I$V/common -I$V/include -I$V/ggml/include -I$V/vendor synth_rates_reference.cpp \
//       -L/work/ref/build/bin -lllama-common -lllama -lggml -lggml-base \
//       -Wl,-rpath,/work/ref/build/bin -o synth_rates_reference
#include "common.h"
#include "speculative.h"
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string len, nmax, rates;
        in >> len >> nmax >> rates;
        common_params_speculative p;
        p.synth_len = std::stod(len);
        if (rates != "-") {
            std::stringstream rs(rates); std::string v;
            while (std::getline(rs, v, ',')) p.synth_rates.push_back(std::stod(v));
        }
        try {
            auto r = common_speculative_synth_rates_resolve(&p, std::stoi(nmax));
            printf("ok");
            for (double x : r) printf(" %.17g", x);
            printf("\n");
        } catch (const std::exception & e) {
            printf("error: %s\n", e.what());
        }
    }
}
