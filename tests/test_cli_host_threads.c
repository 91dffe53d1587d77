/* The command line's --host-threads (rule G4, issue 11): a megacore chip's
 * TensorCores walk on host threads or in order, and what `tilesim run` and
 * `tilesim verify` print does not change with it. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "run.h"

/* The same run with the cores in order and with one thread per core: the
 * JSON (report, timing, verdict) is the same, byte for byte. */
Test(cli_host_threads, run_json_is_the_same_in_order_and_on_threads)
{
    const char *kernels[] = {"matmul", "flash_attention", "rmsnorm"};
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
        th_run a = TH_RUN("run", kernels[i], "--chip", "v5p", "--seed", "3", "--json", "--host-threads", "1");
        th_run b = TH_RUN("run", kernels[i], "--chip", "v5p", "--seed", "3", "--json", "--host-threads", "2");
        cr_assert_eq(a.status, 0, "%s: %s", kernels[i], a.err);
        cr_assert_eq(b.status, 0, "%s: %s", kernels[i], b.err);
        cr_expect(strstr(a.out, "\"cores\":2"), "%s on v5p splits its grid on 2 TensorCores (G4): %s", kernels[i], a.out);
        cr_expect_str_eq(a.out, b.out, "%s: --host-threads 1 and 2 print the same JSON", kernels[i]);
        th_run_free(&a);
        th_run_free(&b);
    }
}

Test(cli_host_threads, verify_passes_on_threads)
{
    th_run r = TH_RUN("verify", "matmul", "--chip", "v4", "--set", "dtype=bf16", "--host-threads", "2");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "PASS"), "%s", r.out);
    th_run_free(&r);
}

Test(cli_host_threads, zero_or_words_are_refused_naming_the_option)
{
    const char *bad[] = {"0", "-1", "two"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        th_run r = TH_RUN("run", "matmul", "--chip", "v5p", "--host-threads", bad[i]);
        cr_expect_eq(r.status, 2, "--host-threads %s: exit 2, got %d", bad[i], r.status);
        cr_expect(strstr(r.err, "--host-threads") && strstr(r.err, bad[i]), "names the option and the value: %s", r.err);
        th_run_free(&r);
    }
}
