/* The orchestration's argument signature (issue 14): the parser accepts
 * the documented text and refuses bad text with SP_EINVAL naming the entry
 * and field; the checker refuses each kind of mismatching run with
 * SP_EARG_SIGNATURE naming the argument. */
#include <criterion/criterion.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

static sp_callable_signature sig;
static char err[512];

static void parse_ok(const char *text)
{
    int rc = sp_callable_parse_signature(text, &sig, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "\"%s\": %s (%s)", text, sp_status_name(rc), err);
}

static void parse_bad(const char *text, const char *needle)
{
    int rc = sp_callable_parse_signature(text, &sig, err, sizeof err);
    cr_assert_eq(rc, SP_EINVAL, "\"%s\" parsed (%s)", text, sp_status_name(rc));
    cr_assert_not_null(strstr(err, needle), "\"%s\": \"%s\" lacks \"%s\"", text, err, needle);
    cr_assert_eq(sig.tensor_count + sig.scalar_count, 0, "a refused text leaves nothing parsed");
}

Test(signature, parses_the_documented_forms)
{
    parse_ok("x:in:f32[n],y:in:f32[n],z:out:f32[n],tile:scalar");
    cr_assert_eq(sig.tensor_count, 3);
    cr_assert_eq(sig.scalar_count, 1);
    cr_assert_eq(sig.symbol_count, 1);
    cr_assert_str_eq(sig.symbols[0], "n");
    cr_assert_str_eq(sig.tensors[2].name, "z");
    cr_assert_eq(sig.tensors[2].kind, SP_CALLABLE_ARG_TENSOR);
    cr_assert_eq(sig.tensors[2].dir, SP_OUT);
    cr_assert_eq(sig.tensors[2].dtype, SP_DTYPE_F32);
    cr_assert_eq(sig.tensors[2].ndim, 1);
    cr_assert_eq(sig.tensors[2].dims[0], -1, "symbol 0 is -(0 + 1)");
    cr_assert_str_eq(sig.scalars[0].name, "tile");
    cr_assert_eq(sig.scalars[0].kind, SP_CALLABLE_ARG_SCALAR);
    cr_assert_eq(sig.scalars[0].dtype, SP_DTYPE_I64, "a scalar's default dtype");

    parse_ok(" a : inout : bf16 [ 64 , k , * ] ,\tb:out_existing:any, c:no_dep:u8[],"
             " s1:scalar:f64 , s2:scalar:bool ");
    cr_assert_eq(sig.tensor_count, 3);
    cr_assert_eq(sig.tensors[0].dir, SP_INOUT);
    cr_assert_eq(sig.tensors[0].dtype, SP_DTYPE_BF16);
    cr_assert_eq(sig.tensors[0].ndim, 3);
    cr_assert_eq(sig.tensors[0].dims[0], 64);
    cr_assert_eq(sig.tensors[0].dims[1], -1);
    cr_assert_eq(sig.tensors[0].dims[2], SP_CALLABLE_DIM_ANY);
    cr_assert_eq(sig.tensors[1].dir, SP_OUT_EXISTING);
    cr_assert_eq(sig.tensors[1].dtype, SP_CALLABLE_DTYPE_ANY);
    cr_assert_eq(sig.tensors[1].ndim, -1, "no dims: any rank");
    cr_assert_eq(sig.tensors[2].dir, SP_NO_DEP);
    cr_assert_eq(sig.tensors[2].ndim, 0, "[]: rank 0");
    cr_assert_eq(sig.scalars[0].dtype, SP_DTYPE_F64);
    cr_assert_eq(sig.scalars[1].dtype, SP_DTYPE_BOOL);

    parse_ok("");
    cr_assert_eq(sig.tensor_count + sig.scalar_count, 0, "empty: nothing declared");
    parse_ok("   ");
    parse_ok("only:scalar");
    cr_assert_eq(sig.scalar_count, 1);
}

Test(signature, refuses_bad_text_naming_entry_and_field)
{
    parse_bad("x:in:f32,,y:in:f32", "signature entry 2 is empty");
    parse_bad("x:in:f32,", "signature entry 2 is empty");
    parse_bad("1x:in:f32", "signature entry 1 (\"1x:in:f32\"): name \"1x\" is not a C identifier");
    parse_bad("x", "signature entry 1 ('x'): no direction");
    parse_bad("x:in", "signature entry 1 ('x'): no DTYPE");
    parse_bad("x:up:f32", "signature entry 1 ('x'): DIR \"up\" is not in, out");
    parse_bad("a:in:f32,x:in:f31", "signature entry 2 ('x'): DTYPE \"f31\"");
    parse_bad("x:in:f32[4", "dims \"[4\" do not end with ']'");
    parse_bad("x:in:f32[0]", "dim 0 is 0");
    parse_bad("x:in:f32[4,-2]", "dim 1 \"-2\" is not a number, a symbol or *");
    parse_bad("x:in:f32[4x]", "dim 0 \"4x\" is not a number");
    parse_bad("x:in:f32[99999999999999999999]", "is not a number");
    parse_bad("x:in:f32[1,2,3,4,5,6]", "more than 5 dims");
    parse_bad("x:in:f32:extra", "unexpected field \"extra\"");
    parse_bad("s:scalar:f16", "scalar DTYPE \"f16\" is not one of i64 u64 f64 f32 bool");
    parse_bad("x:in:f32,x:out:f32", "signature entry 2: name 'x' is used twice");
    parse_bad("s:scalar,x:in:f32", "signature entry 2 ('x'): a tensor after a scalar");
    const char *many = "a:in:f32[s0,s1,s2,s3,s4],b:in:f32[s5,s6,s7,s8,s9],"
                       "c:in:f32[s10,s11,s12,s13,s14],d:in:f32[s15,s16]";
    parse_bad(many, "more than 16 dim symbols");
    char name[80];
    memset(name, 'n', 64);
    strcpy(name + 64, ":scalar");
    parse_bad(name, "is not a C identifier of 1..63 characters");
    cr_assert_eq(sp_callable_parse_signature(NULL, &sig, err, sizeof err), SP_EINVAL);
    cr_assert_eq(sp_callable_parse_signature("", NULL, err, sizeof err), SP_EINVAL);
}

/* ---- the checker --------------------------------------------------------- */

static sp_args args;

static void tensor(uint32_t i, uint8_t dir, int dtype, int ndim, const int64_t *shape)
{
    sp_tensor *t = &args.tensors[i];
    memset(t, 0, sizeof *t);
    t->dtype = (uint8_t)dtype;
    t->ndim = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    args.dirs[i] = dir;
}

/* A run that matches "a:in:f32[m,k],b:in:f32[k,n],c:out:f32[m,n],d:inout:any[4,*],alpha:scalar,
 * flag:scalar:bool". */
static void matching_run(void)
{
    parse_ok("a:in:f32[m,k],b:in:f32[k,n],c:out:f32[m,n],d:inout:any[4,*],alpha:scalar,"
             "flag:scalar:bool");
    memset(&args, 0, sizeof args);
    args.tensor_count = 4;
    args.scalar_count = 2;
    tensor(0, SP_IN, SP_DTYPE_F32, 2, (int64_t[]){8, 16});
    tensor(1, SP_IN, SP_DTYPE_F32, 2, (int64_t[]){16, 32});
    tensor(2, SP_OUT, SP_DTYPE_F32, 2, (int64_t[]){8, 32});
    tensor(3, SP_INOUT, SP_DTYPE_I8, 2, (int64_t[]){4, 1000});
    args.scalars[0] = 12345;
    args.scalars[1] = 1;
}

static void check_bad(const char *needle)
{
    int rc = sp_callable_check_args(&sig, &args, err, sizeof err);
    cr_assert_eq(rc, SP_EARG_SIGNATURE, "expected SP_EARG_SIGNATURE (%s), got %s", needle,
                 sp_status_name(rc));
    cr_assert_not_null(strstr(err, needle), "\"%s\" lacks \"%s\"", err, needle);
}

Test(signature, a_matching_run_passes)
{
    matching_run();
    cr_assert_eq(sp_callable_check_args(&sig, &args, err, sizeof err), SP_OK, "%s", err);
    /* "any" dtype and "*" extents take anything. */
    args.tensors[3].dtype = SP_DTYPE_F64;
    args.tensors[3].shape[1] = 1;
    cr_assert_eq(sp_callable_check_args(&sig, &args, err, sizeof err), SP_OK, "%s", err);
    /* An empty signature declares nothing: only an empty run matches. */
    parse_ok("");
    memset(&args, 0, sizeof args);
    cr_assert_eq(sp_callable_check_args(&sig, &args, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_callable_check_args(NULL, &args, err, sizeof err), SP_EINVAL);
}

Test(signature, each_mismatch_is_named)
{
    matching_run();
    args.tensor_count = 3;
    check_bad("the run gives 3 tensors, the callable declares 4 (a, b, c, d)");
    matching_run();
    args.scalar_count = 1;
    check_bad("the run gives 1 scalars, the callable declares 2 (alpha, flag)");
    matching_run();
    args.dirs[1] = SP_INOUT;
    check_bad("argument 'b' (tensor 1): direction inout, the callable declares in");
    matching_run();
    args.tensors[2].dtype = SP_DTYPE_F16;
    check_bad("argument 'c' (tensor 2): dtype f16, the callable declares f32");
    matching_run();
    args.tensors[0].ndim = 3;
    check_bad("argument 'a' (tensor 0): rank 3, the callable declares rank 2");
    matching_run();
    args.tensors[3].shape[0] = 5;
    check_bad("argument 'd' (tensor 3): dim 0 is 5, the callable declares 4");
    matching_run();
    args.tensors[1].shape[0] = 17; /* k: 16 from a */
    check_bad("argument 'b' (tensor 1): dim 0 (k) is 17, but argument 'a' gave k = 16");
    matching_run();
    args.tensors[2].shape[1] = 31; /* n: 32 from b */
    check_bad("argument 'c' (tensor 2): dim 1 (n) is 31, but argument 'b' gave n = 32");
    matching_run();
    args.scalars[1] = 2;
    check_bad("argument 'flag' (scalar 1): 2 is not a bool");
}
