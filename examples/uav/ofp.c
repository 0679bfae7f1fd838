/*
 * OFP -- the operational flight program partition of the partix UAV demo.
 *
 * A reference APEX partition in C: it uses only the ARINC 653 Part 1 services, with the
 * standard's names, types and parameter order, so it reads (and compiles) like a partition
 * written for any other ARINC 653 platform.
 *
 * The workload is the unmanned-helicopter flight program of the partitioning paper
 * (ima-partitioning-alternatives, table III), with the execution times halved:
 *
 *     process      period   work     priority
 *     GnC          20 ms    1.0 ms   40  (highest: guidance and control)
 *     NavReader    20 ms    3.0 ms   30
 *     SwmReader    80 ms    1.5 ms   20
 *     AdtReader    80 ms    5.0 ms   10
 *
 * Each process is periodic with TIME_CAPACITY = PERIOD and a HARD deadline. Its "work" burns CPU
 * time measured with CLOCK_THREAD_CPUTIME_ID, so the time during which the executive has stopped
 * the partition (outside its windows) does not count as work done.
 *
 * Structure, as ARINC 653 prescribes for a partition's initialisation:
 *   main()  (COLD_START / WARM_START)
 *     CREATE_ERROR_HANDLER
 *     CREATE_PROCESS x4
 *     START x4
 *     SET_PARTITION_MODE(NORMAL)    -- does not return; the processes are scheduled from here
 *
 * Build by hand (partix run does this itself for `partix:Executable="ofp.c"`):
 *     cc -std=c99 -Wall -Wextra -I crates/partix-apex/include examples/uav/ofp.c \
 *        target/release/libpartix_apex.a -lpthread -ldl -lm -o ofp
 * Run without an executive (standalone) for a quick look: ./ofp
 */
#define _POSIX_C_SOURCE 200809L

#include <arinc653/types.h>
#include <arinc653/partition.h>
#include <arinc653/process.h>
#include <arinc653/time.h>
#include <arinc653/error.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MS(x) ((SYSTEM_TIME_TYPE)((x) * 1000000.0))

/* Jobs completed per process (written by that process only). */
static volatile unsigned long gnc_jobs, nav_jobs, swm_jobs, adt_jobs;

/* Print a line from the partition (stdout is line-buffered by main). */
#define LOG(...) printf("OFP: " __VA_ARGS__)

/* ---- work ------------------------------------------------------------------------------------ */

static SYSTEM_TIME_TYPE thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (SYSTEM_TIME_TYPE)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Burn `ns` nanoseconds of this thread's CPU time (time outside the partition's windows, when
 * the whole partition is stopped, is not counted). */
static void work(SYSTEM_TIME_TYPE ns)
{
    SYSTEM_TIME_TYPE start = thread_cpu_ns();
    while (thread_cpu_ns() - start < ns) {
        /* spin */
    }
}

/* The first job of each process reports in, GnC once per second after that. */
static void job_done(const char *name, volatile unsigned long *jobs, unsigned long report_every)
{
    SYSTEM_TIME_TYPE now;
    RETURN_CODE_TYPE rc;

    (*jobs)++;
    if (*jobs == 1 || (report_every != 0 && *jobs % report_every == 0)) {
        PARTITION_STATUS_TYPE st;
        GET_TIME(&now, &rc);
        GET_PARTITION_STATUS(&st, &rc);
        LOG("%s job %lu done at %lld.%03lld ms (mode %s)\n", name, *jobs,
            (long long)(now / 1000000), (long long)(now / 1000 % 1000),
            st.OPERATING_MODE == NORMAL ? "NORMAL" : "not NORMAL");
    }
}

/* ---- processes ------------------------------------------------------------------------------- */

static void gnc(void)
{
    RETURN_CODE_TYPE rc;
    for (;;) {
        work(MS(1.0));
        job_done("GnC", &gnc_jobs, 50);
        PERIODIC_WAIT(&rc);
    }
}

static void nav_reader(void)
{
    RETURN_CODE_TYPE rc;
    for (;;) {
        work(MS(3.0));
        job_done("NavReader", &nav_jobs, 0);
        PERIODIC_WAIT(&rc);
    }
}

static void swm_reader(void)
{
    RETURN_CODE_TYPE rc;
    for (;;) {
        work(MS(1.5));
        job_done("SwmReader", &swm_jobs, 0);
        PERIODIC_WAIT(&rc);
    }
}

static void adt_reader(void)
{
    RETURN_CODE_TYPE rc;
    for (;;) {
        work(MS(5.0));
        job_done("AdtReader", &adt_jobs, 0);
        PERIODIC_WAIT(&rc);
    }
}

/* ---- health monitoring ----------------------------------------------------------------------- */

static const char *error_code_name(ERROR_CODE_TYPE code)
{
    switch (code) {
    case DEADLINE_MISSED:   return "DEADLINE_MISSED";
    case APPLICATION_ERROR: return "APPLICATION_ERROR";
    case NUMERIC_ERROR:     return "NUMERIC_ERROR";
    case ILLEGAL_REQUEST:   return "ILLEGAL_REQUEST";
    case STACK_OVERFLOW:    return "STACK_OVERFLOW";
    case MEMORY_VIOLATION:  return "MEMORY_VIOLATION";
    case HARDWARE_FAULT:    return "HARDWARE_FAULT";
    case POWER_FAIL:        return "POWER_FAIL";
    }
    return "UNKNOWN";
}

/* The error handler: log every pending error through REPORT_APPLICATION_MESSAGE, then stop
 * (the health monitor starts it again at the next error). */
static void error_handler(void)
{
    ERROR_STATUS_TYPE status;
    RETURN_CODE_TYPE rc;
    char line[MAX_ERROR_MESSAGE_SIZE];
    int n;

    for (;;) {
        GET_ERROR_STATUS(&status, &rc);
        if (rc != NO_ERROR) {
            break; /* NO_ACTION: nothing more pending */
        }
        n = snprintf(line, sizeof line, "OFP error handler: %s in process %d: %.*s",
                     error_code_name(status.ERROR_CODE), (int)status.FAILED_PROCESS_ID,
                     (int)status.LENGTH, (const char *)status.MESSAGE);
        if (n < 0) {
            n = 0;
        } else if (n >= (int)sizeof line) {
            n = (int)sizeof line - 1;
        }
        REPORT_APPLICATION_MESSAGE((MESSAGE_ADDR_TYPE)line, n, &rc);
    }
    STOP_SELF();
}

/* ---- initialisation -------------------------------------------------------------------------- */

struct process_spec {
    const char      *name;
    void            (*entry)(void);
    SYSTEM_TIME_TYPE period;
    PRIORITY_TYPE    priority;
};

static const struct process_spec PROCESSES[] = {
    { "GnC",       gnc,        MS(20), 40 },
    { "NavReader", nav_reader, MS(20), 30 },
    { "SwmReader", swm_reader, MS(80), 20 },
    { "AdtReader", adt_reader, MS(80), 10 },
};

#define N_PROCESSES (sizeof PROCESSES / sizeof PROCESSES[0])

int main(void)
{
    PROCESS_ATTRIBUTE_TYPE attr;
    PROCESS_ID_TYPE        pid[N_PROCESSES];
    RETURN_CODE_TYPE       rc;
    PARTITION_STATUS_TYPE  status;
    unsigned               i;

    setvbuf(stdout, NULL, _IOLBF, 0);

    GET_PARTITION_STATUS(&status, &rc);
    LOG("partition %d starting (mode %d, start condition %d)\n", (int)status.IDENTIFIER,
        (int)status.OPERATING_MODE, (int)status.START_CONDITION);

    CREATE_ERROR_HANDLER((SYSTEM_ADDRESS_TYPE)error_handler, 16 * 1024, &rc);
    if (rc != NO_ERROR) {
        LOG("CREATE_ERROR_HANDLER failed: %d\n", (int)rc);
    }

    for (i = 0; i < N_PROCESSES; i++) {
        memset(&attr, 0, sizeof attr);
        strncpy(attr.NAME, PROCESSES[i].name, MAX_NAME_LENGTH);
        attr.ENTRY_POINT   = (SYSTEM_ADDRESS_TYPE)PROCESSES[i].entry;
        attr.PERIOD        = PROCESSES[i].period;
        attr.TIME_CAPACITY = PROCESSES[i].period;
        attr.BASE_PRIORITY = PROCESSES[i].priority;
        attr.STACK_SIZE    = 64 * 1024;
        attr.DEADLINE      = HARD;
        CREATE_PROCESS(&attr, &pid[i], &rc);
        if (rc != NO_ERROR) {
            LOG("CREATE_PROCESS %s failed: %d\n", PROCESSES[i].name, (int)rc);
            return 1;
        }
    }

    for (i = 0; i < N_PROCESSES; i++) {
        START(pid[i], &rc);
        if (rc != NO_ERROR) {
            LOG("START %s failed: %d\n", PROCESSES[i].name, (int)rc);
            return 1;
        }
    }

    LOG("%u processes created and started; entering NORMAL mode\n", (unsigned)N_PROCESSES);
    SET_PARTITION_MODE(NORMAL, &rc);

    /* Only reached if the mode change failed. */
    LOG("SET_PARTITION_MODE(NORMAL) failed: %d\n", (int)rc);
    return 1;
}
