/* The list of examples `simpler run` / `simpler list` and the tests see.
 * Adding an example: define its ex_example in examples/<name>/example.c,
 * list it here and in examples/CMakeLists.txt. */
#include <string.h>

#include "example.h"

extern const ex_example ex_vector_example;
extern const ex_example ex_matmul_diamond;
extern const ex_example ex_bgemm;
extern const ex_example ex_paged_attention;
extern const ex_example ex_dummy_chain;
extern const ex_example ex_control_rw;
extern const ex_example ex_decoder;
extern const ex_example ex_moe;

static const ex_example *const examples[] = {
    &ex_vector_example, &ex_matmul_diamond, &ex_bgemm,   &ex_paged_attention,
    &ex_dummy_chain,    &ex_control_rw,     &ex_decoder, &ex_moe,
};

const ex_example *const *ex_registry(int *count)
{
    *count = (int)(sizeof examples / sizeof examples[0]);
    return examples;
}

const ex_example *ex_find(const char *name)
{
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
        if (strcmp(examples[i]->name, name) == 0)
            return examples[i];
    return NULL;
}
