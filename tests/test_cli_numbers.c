/* tests/test_cli_numbers.c: whole numbers on tilesim's command line (issue
 * 21). One reader (cli_parse_int over ex_scan_int) takes decimal digits
 * only and checks the range however long the number is: --seed
 * 18446744073709551617 once wrapped to 1 (signed overflow in the digit loop),
 * 9223372036854775808 passed a stated maximum of 4611686018427387903, and
 * --seed 0, the documented default, was refused. Messages that echo the
 * user's text cut it: a 10,000-value --vary list came back whole. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define SEED_MAX "4611686018427387903"

Test(cli_numbers, seed_takes_zero_to_its_maximum)
{
    static const char *const ok[] = {"0", "1", "007", SEED_MAX};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        th_run r = TH_RUN("run", "add", "--cost-only", "--seed", ok[i]);
        cr_expect_eq(r.status, 0, "--seed %s: exit %d: %s", ok[i], r.status, r.err);
        th_run_free(&r);
    }
}

Test(cli_numbers, seed_refuses_overflow_signs_spaces_and_hex)
{
    static const struct { const char *arg, *says; } bad[] = {
        {"18446744073709551617", "'18446744073709551617' is too large; at most " SEED_MAX},
        {"18446744073709551616", "is too large; at most " SEED_MAX},
        {"9223372036854775808", "'9223372036854775808' is too large; at most " SEED_MAX},
        {"9223372036854775807", "is too large; at most " SEED_MAX},
        {"4611686018427387904", "'4611686018427387904' is too large; at most " SEED_MAX},
        {"99999999999999999999999999999999999999", "is too large"},
        {"-1", "'-1' is too small; give a whole number from 0 to " SEED_MAX},
        {"-99999999999999999999999", "is too small"},
        {"12x", "'12x' is not a whole number"},
        {" 5", "' 5' is not a whole number"},
        {"+5", "'+5' is not a whole number"},
        {"0x10", "'0x10' is not a whole number"},
        {"5 ", "'5 ' is not a whole number"},
        {"-", "'-' is not a whole number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        th_run r = TH_RUN("run", "add", "--cost-only", "--seed", bad[i].arg);
        cr_expect_eq(r.status, 2, "--seed '%s': exit %d: %s", bad[i].arg, r.status, r.err);
        cr_expect(strstr(r.err, "--seed: "), "--seed '%s': the message names the option: %s", bad[i].arg, r.err);
        cr_expect(strstr(r.err, bad[i].says), "--seed '%s': stderr lacks \"%s\": %s", bad[i].arg, bad[i].says,
                  r.err);
        th_run_free(&r);
    }
}

/* the counts (sizes, tiles, --top) go through the same reader */
Test(cli_numbers, counts_refuse_overflow_and_keep_their_messages)
{
    th_run r = TH_RUN("sweep", "matmul", "256", "256", "18446744073709551617");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "K: '18446744073709551617' is too large"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("sweep", "matmul", "256", "256", "0");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "K: '0' must be positive"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("sweep", "matmul", "256", "256", "256", "--bm", "128,+256");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--bm: '+256' in the list '128,+256' is not a whole number"), "%s", r.err);
    th_run_free(&r);
}

/* a huge argument is named by its count or cut, never echoed whole */
Test(cli_numbers, long_user_text_is_cut_in_messages)
{
    enum { N = 10000 };
    static char vary[8 * N + 16];
    int at = snprintf(vary, sizeof vary, "br=");
    for (int i = 0; i < N; i++) at += snprintf(vary + at, sizeof vary - (size_t)at, "%s%d", i ? "," : "", 8 + i);
    th_run r = TH_RUN("sweep", "rmsnorm", "--vary", vary);
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--vary br: 10000 values; at most 64"), "%.300s", r.err);
    cr_expect_lt(strlen(r.err), 400, "the message echoes the list: %zu bytes", strlen(r.err));
    th_run_free(&r);

    static char word[5001];
    memset(word, '7', sizeof word - 1);
    const char *const *cases[] = {
        (const char *const[]){"run", "add", "--seed", word, NULL},
        (const char *const[]){"run", "add", word, NULL},
        (const char *const[]){"run", word, NULL},
        (const char *const[]){"sweep", "matmul", "256", "256", "256", "--bm", word, NULL},
        (const char *const[]){word, NULL},
        (const char *const[]){"help", word, NULL},
        (const char *const[]){"sweep", word, "1", "1", "1", NULL},
        (const char *const[]){"explain", word, NULL},
        (const char *const[]){"chips", word, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        r = th_run_tilesim(cases[i]);
        cr_expect_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_expect_lt(strlen(r.err), 600, "case %zu echoes the whole word: %zu bytes", i, strlen(r.err));
        cr_expect(strstr(r.err, "7777..."), "case %zu: the word is cut with '...': %.300s", i, r.err);
        th_run_free(&r);
    }
}

/* the mesh programs' options (examples/kernels/options.c) read numbers the same way */
Test(cli_numbers, mesh_program_numbers_are_strict_too)
{
    static const char *const bad[] = {"+5", " 5", "0x10", "18446744073709551617"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        th_run r = TH_RUN("run", "ring_allreduce", "--seed", bad[i]);
        cr_expect_eq(r.status, 2, "--seed '%s': exit %d: %s", bad[i], r.status, r.err);
        cr_expect(strstr(r.err, "--seed must be a whole number"), "--seed '%s': %s", bad[i], r.err);
        th_run_free(&r);
    }
}

/* What the user gave comes back cut and without control characters: a
 * 300-digit --set was echoed whole (a 5000-digit one filled the screen),
 * and a CSV with CR line ends put a raw CR in the message. */
Test(cli_numbers, echoed_values_are_cut_and_carry_no_control_characters)
{
    char set[400] = "M=";
    memset(set + 2, '9', 300);
    th_run r = TH_RUN("run", "matmul", "--set", set);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "...' is not a non-negative decimal integer"), "%s", r.err);
    cr_expect_lt(strlen(r.err), 600, "%zu bytes of message", strlen(r.err));
    th_run_free(&r);
    char csv[64];
    th_temp_file(csv, "M,N,K\r512,512,512\r");
    r = TH_RUN("tune", "matmul", "--shapes", csv);
    cr_expect_eq(r.status, 2);
    cr_expect(!strchr(r.err, '\r') && strstr(r.err, "'K?512'"), "%s", r.err);
    th_run_free(&r);
    unlink(csv);
}

/* The mesh's knobs refuse what they cannot read, as TILESIM_HOST_MEMORY
 * does (junk was ignored without a word). */
Test(cli_numbers, junk_mesh_knobs_are_refused)
{
    static const char *const knobs[][2] = {{"TILESIM_MESH_STACK_MB", "junk"}, {"TILESIM_MESH_THREADS", "2"},
                                           {"TILESIM_MESH_POOL", "-5"}};
    for (int i = 0; i < 3; i++) {
        setenv(knobs[i][0], knobs[i][1], 1);
        th_run r = TH_RUN("run", "ring_allreduce", "--devices", "4", "--cost-only");
        cr_expect_eq(r.status, 2, "%s=%s: exit %d", knobs[i][0], knobs[i][1], r.status);
        cr_expect(strstr(r.err, knobs[i][0]), "%s", r.err);
        th_run_free(&r);
        unsetenv(knobs[i][0]);
    }
    setenv("TILESIM_MESH_POOL", "2", 1);
    th_run r = TH_RUN("run", "ring_allreduce", "--devices", "4", "--cost-only");
    cr_expect_eq(r.status, 0, "a good value runs: %s", r.err);
    th_run_free(&r);
}
