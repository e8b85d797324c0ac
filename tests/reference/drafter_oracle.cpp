// llama.cpp's own speculative chain (common/speculative.cpp) driven by an oracle target.
//
// With a greedy target, what the target emits does not depend on the drafts: the accepted
// count of a round is the common prefix of the draft and the target's continuation. Given
// that continuation, this program replays llama-speculative-simple's round loop (the same
// budget, draft, accept and history updates) through common_speculative_* with no model,
// so SpecScope's drafters can be compared with llama.cpp's draft by draft, on any sequence.
//
// stdin:  line 1: the prompt's token ids; line 2: the target's continuation (token ids)
// args:   n_ctx n_predict, then llama.cpp flags (--spec-type ..., --spec-ngram-...)
// stdout: one line per round: "<accepted> <drafted> : <draft token ids>"
//
// Build: see tests/conformance/drafters.py (never committed as a binary).
#include "arg.h"
#include "common.h"
#include "speculative.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

static std::vector<llama_token> read_line() {
    std::string line;
    std::getline(std::cin, line);
    std::istringstream in(line);
    std::vector<llama_token> out;
    llama_token t;
    while (in >> t) out.push_back(t);
    return out;
}

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: n_ctx n_predict [llama.cpp flags]\n"); return 1; }
    const int n_ctx = atoi(argv[1]);
    const int n_predict_max = atoi(argv[2]);
    common_params params;
    std::vector<char *> args = { argv[0] };
    for (int i = 3; i < argc; ++i) args.push_back(argv[i]);
    if (!common_params_parse((int) args.size(), args.data(), params, LLAMA_EXAMPLE_SPECULATIVE)) {
        return 1;
    }
    const std::vector<llama_token> inp = read_line();
    const std::vector<llama_token> cont = read_line();

    common_speculative * spec = common_speculative_init(params.speculative, 1);
    if (!spec) { fprintf(stderr, "no speculative implementation\n"); return 1; }

    llama_tokens prompt_tgt(inp.begin(), inp.end() - 1);
    llama_token id_last = inp.back();
    int n_past = (int) inp.size() - 1;
    int n_predict = 0;
    size_t pos = 0;
    common_speculative_begin(spec, 0, prompt_tgt);
    llama_tokens draft;
    while (pos < cont.size()) {
        int n_draft_max = n_ctx - n_past - 2;
        n_draft_max = std::min(n_draft_max, n_predict_max - n_predict - 1);
        n_draft_max = std::max(n_draft_max, 0);
        draft.clear();
        common_speculative_get_draft_params(spec, 0) = { true, n_draft_max, n_past, id_last, &prompt_tgt, &draft };
        common_speculative_draft(spec);
        size_t acc = 0;
        while (acc < draft.size() && pos + acc < cont.size() && draft[acc] == cont[pos + acc]) acc++;
        if (pos + acc >= cont.size()) break;           // the continuation ends inside this round
        common_speculative_accept(spec, 0, (uint16_t) acc);
        printf("%zu %zu :", acc, draft.size());
        for (auto t : draft) printf(" %d", t);
        printf("\n");
        for (size_t i = 0; i <= acc; ++i) {
            prompt_tgt.push_back(id_last);
            id_last = cont[pos + i];
        }
        pos += acc + 1;
        n_past += acc + 1;
        n_predict += acc + 1;
        if (n_predict > n_predict_max) break;
    }
    common_speculative_free(spec);
    return 0;
}
