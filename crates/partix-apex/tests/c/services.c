/*
 * Every return code of every APEX service, and the process state machine, from C.
 *
 * Prints one line per check: "SERVICE CASE rc=NAME" (or "STATE PROCESS CASE STATE" and
 * "VALUE NAME CASE N"); tests/c_api.rs compares the lines with the expected ones. Waiting for
 * another process to reach a state polls with TIMED_WAIT (1 ms) up to 10 s, so the checks do not
 * depend on timing.
 *
 * Layout: main() runs the initialisation (COLD_START) checks, creates the processes and the error
 * handler, then SET_PARTITION_MODE(NORMAL). The highest-priority process "driver" runs the NORMAL
 * mode checks against "worker" (aperiodic, suspends itself in a loop), "sleeper" (aperiodic,
 * TIMED_WAIT loop), "periodic" (50 ms), "spare" (STOP_SELF), "idle_periodic", "misser" (misses its
 * first deadline) and "bounded" (aperiodic with a finite time capacity). The error handler records
 * what GET_ERROR_STATUS returns; the driver prints it. At the end the driver calls
 * SET_PARTITION_MODE(WARM_START): standalone, the program is executed again with
 * START_CONDITION = PARTITION_RESTART, and that second run ends with SET_PARTITION_MODE(IDLE)
 * (exit status 0).
 */
#define _POSIX_C_SOURCE 200809L

#include <arinc653/apex.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *rc_name(RETURN_CODE_TYPE rc)
{
    switch (rc) {
    case NO_ERROR:       return "NO_ERROR";
    case NO_ACTION:      return "NO_ACTION";
    case NOT_AVAILABLE:  return "NOT_AVAILABLE";
    case INVALID_PARAM:  return "INVALID_PARAM";
    case INVALID_CONFIG: return "INVALID_CONFIG";
    case INVALID_MODE:   return "INVALID_MODE";
    case TIMED_OUT:      return "TIMED_OUT";
    }
    return "UNKNOWN";
}

static const char *state_name(PROCESS_STATE_TYPE s)
{
    switch (s) {
    case DORMANT: return "DORMANT";
    case READY:   return "READY";
    case RUNNING: return "RUNNING";
    case WAITING: return "WAITING";
    case FAULTED: return "FAULTED";
    }
    return "UNKNOWN";
}

/* Run the call (which sets rc) and print "SERVICE CASE rc=NAME". */
#define CHECK(SERVICE, CASE, ...)                                                    \
    do {                                                                             \
        RETURN_CODE_TYPE rc = (RETURN_CODE_TYPE)99;                                  \
        __VA_ARGS__;                                                                 \
        printf("%s %s rc=%s\n", SERVICE, CASE, rc_name(rc));                         \
        fflush(stdout);                                                              \
    } while (0)

static void value(const char *name, const char *c, long long v)
{
    printf("VALUE %s %s %lld\n", name, c, v);
    fflush(stdout);
}

static PROCESS_ID_TYPE driver_id, worker_id, sleeper_id, periodic_id, spare_id, idle_periodic_id, misser_id, bounded_id;
static volatile int worker_runs = 0;
static volatile int periodic_jobs = 0;
static volatile RETURN_CODE_TYPE periodic_suspend_self_rc = (RETURN_CODE_TYPE)99;
static volatile RETURN_CODE_TYPE periodic_replenish_rc = (RETURN_CODE_TYPE)99;
static volatile RETURN_CODE_TYPE periodic_replenish_bad_rc = (RETURN_CODE_TYPE)99;
static volatile RETURN_CODE_TYPE periodic_replenish_overflow_rc = (RETURN_CODE_TYPE)99;
static volatile RETURN_CODE_TYPE periodic_replenish_late_rc = (RETURN_CODE_TYPE)99;
static volatile RETURN_CODE_TYPE periodic_replenish_inf_rc = (RETURN_CODE_TYPE)99;

static PROCESS_STATE_TYPE state_of(PROCESS_ID_TYPE pid)
{
    PROCESS_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    GET_PROCESS_STATUS(pid, &st, &rc);
    return rc == NO_ERROR ? st.PROCESS_STATE : (PROCESS_STATE_TYPE)99;
}

static void show_state(const char *who, PROCESS_ID_TYPE pid, const char *c)
{
    printf("STATE %s %s %s\n", who, c, state_name(state_of(pid)));
    fflush(stdout);
}

/* Poll (TIMED_WAIT 1 ms) until COND holds, at most 10 s; print a failure line otherwise. */
#define WAIT_UNTIL(WHAT, COND)                                                       \
    do {                                                                             \
        int tries_ = 0;                                                              \
        RETURN_CODE_TYPE wrc_;                                                       \
        while (!(COND) && tries_++ < 10000) TIMED_WAIT(1000000, &wrc_);              \
        if (!(COND)) { printf("TIMEOUT waiting for %s\n", WHAT); fflush(stdout); }   \
    } while (0)

/* ---- processes ---------------------------------------------------------------------------- */

static volatile RETURN_CODE_TYPE worker_suspend_rc = (RETURN_CODE_TYPE)99;

static void worker(void)
{
    RETURN_CODE_TYPE rc;
    for (;;) {
        worker_runs++;
        SUSPEND_SELF(INFINITE_TIME_VALUE, &rc);
        worker_suspend_rc = rc;
    }
}

static void sleeper(void)
{
    RETURN_CODE_TYPE rc;
    for (;;) TIMED_WAIT(1000000000LL, &rc);
}

static void periodic(void)
{
    RETURN_CODE_TYPE rc;
    SUSPEND_SELF(1000000, &rc);           /* a periodic process cannot suspend itself */
    periodic_suspend_self_rc = rc;
    REPLENISH(-5, &rc);                   /* negative budget */
    periodic_replenish_bad_rc = rc;
    REPLENISH(0x7fffffffffffff00LL, &rc); /* a deadline past SYSTEM_TIME_TYPE */
    periodic_replenish_overflow_rc = rc;
    REPLENISH(60000000, &rc);             /* 60 ms: past the next release (period 50 ms) */
    periodic_replenish_late_rc = rc;
    REPLENISH(INFINITE_TIME_VALUE, &rc);  /* a periodic process keeps a finite deadline */
    periodic_replenish_inf_rc = rc;
    REPLENISH(10000000, &rc);             /* 10 ms: before the next release */
    periodic_replenish_rc = rc;
    for (;;) {
        periodic_jobs++;
        PERIODIC_WAIT(&rc);
    }
}

static void spare(void)
{
    for (;;) STOP_SELF();
}

/* What the error handler saw, one record per error (read by the driver). */
struct seen_error {
    ERROR_CODE_TYPE code;
    PROCESS_ID_TYPE failed;
    int length;
    char message[MAX_ERROR_MESSAGE_SIZE + 1];
};
static struct seen_error seen[8];
static volatile int n_seen = 0;
static volatile int handler_runs = 0;
static RETURN_CODE_TYPE eh_rc[9];

static void error_handler(void)
{
    ERROR_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    LOCK_LEVEL_TYPE level;

    for (;;) {
        GET_ERROR_STATUS(&st, &rc);
        if (rc != NO_ERROR) break;
        if (n_seen < 8) {
            struct seen_error *e = &seen[n_seen];
            e->code = st.ERROR_CODE;
            e->failed = st.FAILED_PROCESS_ID;
            e->length = (int)st.LENGTH;
            memcpy(e->message, st.MESSAGE, (size_t)st.LENGTH);
            e->message[st.LENGTH] = 0;
            n_seen++;
        }
    }
    if (handler_runs == 0) {
        eh_rc[0] = rc; /* after the last pending error: NO_ACTION */
        GET_ERROR_STATUS(NULL, &eh_rc[1]);
        TIMED_WAIT(1000, &eh_rc[2]);
        LOCK_PREEMPTION(&level, &eh_rc[3]);
        UNLOCK_PREEMPTION(&level, &eh_rc[4]);
        SUSPEND_SELF(1000, &eh_rc[5]);
        {
            PROCESS_ID_TYPE me;
            GET_MY_ID(&me, &eh_rc[6]);
        }
        PERIODIC_WAIT(&eh_rc[7]);
        REPLENISH(1000, &eh_rc[8]);
    }
    handler_runs++;
    STOP_SELF();
}

/* Print the error handler's record `i` as VALUE lines. */
static void show_seen(int i, const char *c)
{
    value("ERROR_CODE", c, seen[i].code);
    value("FAILED_PROCESS_IS_DRIVER", c, seen[i].failed == driver_id);
    value("LENGTH", c, seen[i].length);
    printf("VALUE MESSAGE %s %s\n", c, seen[i].message);
}

/* A periodic process that overruns its first job (200 ms of waiting in a 50 ms period). */
static void misser(void)
{
    RETURN_CODE_TYPE rc;
    TIMED_WAIT(200000000, &rc);
    for (;;) PERIODIC_WAIT(&rc);
}

static void idle_periodic(void)
{
    RETURN_CODE_TYPE rc;
    for (;;) PERIODIC_WAIT(&rc);
}

static void driver(void)
{
    RETURN_CODE_TYPE rc;
    PROCESS_ID_TYPE id;
    PROCESS_STATUS_TYPE pst;
    PARTITION_STATUS_TYPE part;
    LOCK_LEVEL_TYPE level = -1;
    SYSTEM_TIME_TYPE t0 = 0, t1 = 0;
    ERROR_STATUS_TYPE est;
    PROCESS_ATTRIBUTE_TYPE attr;
    int i, runs;
    APEX_BYTE msg[200];

    memset(msg, 'm', sizeof msg);

    /* -- partition ---------------------------------------------------------------------- */
    CHECK("GET_PARTITION_STATUS", "normal", GET_PARTITION_STATUS(&part, &rc));
    value("OPERATING_MODE", "normal", part.OPERATING_MODE);
    value("LOCK_LEVEL", "normal", part.LOCK_LEVEL);
    CHECK("SET_PARTITION_MODE", "normal_again", SET_PARTITION_MODE(NORMAL, &rc));
    CHECK("SET_PARTITION_MODE", "bad_mode", SET_PARTITION_MODE((OPERATING_MODE_TYPE)7, &rc));
    /* The table is full and the handler exists: those come before the mode (the standard's
       order). */
    CHECK("CREATE_PROCESS", "in_normal_table_full", {
        memset(&attr, 0, sizeof attr);
        attr.ENTRY_POINT = spare; attr.PERIOD = INFINITE_TIME_VALUE;
        attr.TIME_CAPACITY = INFINITE_TIME_VALUE; attr.BASE_PRIORITY = 5;
        strcpy(attr.NAME, "late");
        CREATE_PROCESS(&attr, &id, &rc);
    });
    CHECK("CREATE_ERROR_HANDLER", "in_normal_exists", CREATE_ERROR_HANDLER(error_handler, 0, &rc));
    /* A null entry point comes after NO_ACTION, as CREATE_PROCESS orders it (review 27). */
    CHECK("CREATE_ERROR_HANDLER", "in_normal_exists_null", CREATE_ERROR_HANDLER(NULL, 0, &rc));

    /* -- identity --------------------------------------------------------------------------- */
    CHECK("GET_MY_ID", "process", GET_MY_ID(&id, &rc));
    value("MY_ID_IS_DRIVER", "process", id == driver_id);
    CHECK("GET_MY_ID", "null_id", GET_MY_ID(NULL, &rc));
    CHECK("GET_PROCESS_ID", "known", GET_PROCESS_ID("worker", &id, &rc));
    value("ID_IS_WORKER", "known", id == worker_id);
    CHECK("GET_PROCESS_STATUS", "running_self", GET_PROCESS_STATUS(driver_id, &pst, &rc));
    value("STATE", "running_self", pst.PROCESS_STATE);
    value("NAME_IS_DRIVER", "running_self", strncmp(pst.ATTRIBUTES.NAME, "driver", MAX_NAME_LENGTH) == 0);
    value("ENTRY_POINT_IS_DRIVER", "running_self", pst.ATTRIBUTES.ENTRY_POINT == (SYSTEM_ADDRESS_TYPE)driver);

    /* -- worker: the state machine ---------------------------------------------------------- */
    WAIT_UNTIL("worker to suspend itself", worker_runs == 1 && state_of(worker_id) == WAITING);
    show_state("worker", worker_id, "self_suspended");
    CHECK("SUSPEND", "already_suspended", SUSPEND(worker_id, &rc));
    CHECK("RESUME", "self_suspended", RESUME(worker_id, &rc));
    WAIT_UNTIL("worker to run again", worker_runs == 2 && state_of(worker_id) == WAITING);
    value("WORKER_RUNS", "after_resume", worker_runs);
    printf("SUSPEND_SELF resumed rc=%s\n", rc_name(worker_suspend_rc));
    CHECK("RESUME", "not_suspended_sleeper", RESUME(sleeper_id, &rc));
    CHECK("SUSPEND", "waiting_sleeper", SUSPEND(sleeper_id, &rc));
    show_state("sleeper", sleeper_id, "suspended");
    CHECK("SUSPEND", "again", SUSPEND(sleeper_id, &rc));
    CHECK("RESUME", "suspended_sleeper", RESUME(sleeper_id, &rc));
    CHECK("SUSPEND", "self", SUSPEND(driver_id, &rc));
    CHECK("SUSPEND", "periodic", SUSPEND(periodic_id, &rc));
    CHECK("RESUME", "periodic", RESUME(periodic_id, &rc));
    CHECK("SUSPEND", "unknown_id", SUSPEND(9999, &rc));
    CHECK("RESUME", "self", RESUME(driver_id, &rc));
    CHECK("RESUME", "unknown_id", RESUME(9999, &rc));

    CHECK("SET_PRIORITY", "ok", SET_PRIORITY(worker_id, 50, &rc));
    GET_PROCESS_STATUS(worker_id, &pst, &rc);
    value("CURRENT_PRIORITY", "after_set", pst.CURRENT_PRIORITY);
    value("BASE_PRIORITY", "after_set", pst.ATTRIBUTES.BASE_PRIORITY);
    CHECK("SET_PRIORITY", "too_low", SET_PRIORITY(worker_id, MIN_PRIORITY_VALUE - 1, &rc));
    CHECK("SET_PRIORITY", "too_high", SET_PRIORITY(worker_id, MAX_PRIORITY_VALUE + 1, &rc));
    CHECK("SET_PRIORITY", "unknown_id", SET_PRIORITY(9999, 10, &rc));

    CHECK("STOP", "suspended_worker", STOP(worker_id, &rc));
    show_state("worker", worker_id, "stopped");
    CHECK("STOP", "dormant", STOP(worker_id, &rc));
    CHECK("STOP", "self", STOP(driver_id, &rc));
    CHECK("STOP", "unknown_id", STOP(9999, &rc));
    CHECK("RESUME", "dormant", RESUME(worker_id, &rc));
    CHECK("SUSPEND", "dormant", SUSPEND(worker_id, &rc));
    CHECK("SET_PRIORITY", "dormant", SET_PRIORITY(worker_id, 10, &rc));
    GET_PROCESS_STATUS(worker_id, &pst, &rc);
    value("CURRENT_PRIORITY", "after_stop", pst.CURRENT_PRIORITY);

    CHECK("START", "dormant", START(worker_id, &rc));
    WAIT_UNTIL("worker to run after START", worker_runs == 3 && state_of(worker_id) == WAITING);
    value("WORKER_RUNS", "after_start", worker_runs);
    GET_PROCESS_STATUS(worker_id, &pst, &rc);
    value("CURRENT_PRIORITY", "after_start", pst.CURRENT_PRIORITY);
    CHECK("START", "not_dormant", START(worker_id, &rc));
    CHECK("START", "unknown_id", START(9999, &rc));

    STOP(worker_id, &rc);
    CHECK("DELAYED_START", "negative", DELAYED_START(worker_id, -2, &rc));
    CHECK("DELAYED_START", "unknown_id", DELAYED_START(9999, 1000, &rc));
    runs = worker_runs;
    CHECK("DELAYED_START", "dormant", DELAYED_START(worker_id, 20000000, &rc));
    show_state("worker", worker_id, "delayed");
    CHECK("DELAYED_START", "not_dormant", DELAYED_START(worker_id, 1000, &rc));
    WAIT_UNTIL("worker to run after DELAYED_START", worker_runs == runs + 1 && state_of(worker_id) == WAITING);
    value("WORKER_RAN", "after_delayed_start", worker_runs == runs + 1);
    CHECK("DELAYED_START", "deadline_overflow", DELAYED_START(bounded_id, 0x7fffffffffffff00LL, &rc));
    show_state("bounded", bounded_id, "after_failed_start");
    CHECK("DELAYED_START", "periodic_delay_ge_period", DELAYED_START(idle_periodic_id, 50000000, &rc));
    CHECK("DELAYED_START", "periodic_ok", DELAYED_START(idle_periodic_id, 10000000, &rc));
    WAIT_UNTIL("spare to stop itself", state_of(spare_id) == DORMANT);
    show_state("spare", spare_id, "stopped_itself");

    /* -- the periodic process ----------------------------------------------------------------- */
    WAIT_UNTIL("three periodic jobs", periodic_jobs >= 3);
    value("PERIODIC_JOBS_AT_LEAST_3", "normal", periodic_jobs >= 3);
    printf("SUSPEND_SELF periodic rc=%s\n", rc_name(periodic_suspend_self_rc));
    printf("REPLENISH negative rc=%s\n", rc_name(periodic_replenish_bad_rc));
    printf("REPLENISH deadline_overflow rc=%s\n", rc_name(periodic_replenish_overflow_rc));
    printf("REPLENISH past_next_release rc=%s\n", rc_name(periodic_replenish_late_rc));
    printf("REPLENISH periodic_infinite rc=%s\n", rc_name(periodic_replenish_inf_rc));
    printf("REPLENISH periodic rc=%s\n", rc_name(periodic_replenish_rc));
    GET_PROCESS_STATUS(periodic_id, &pst, &rc);
    value("DEADLINE_TIME_SET", "periodic", pst.DEADLINE_TIME > 0);

    /* -- time --------------------------------------------------------------------------------- */
    CHECK("GET_TIME", "ok", GET_TIME(&t0, &rc));
    CHECK("GET_TIME", "null", GET_TIME(NULL, &rc));
    CHECK("TIMED_WAIT", "ok", TIMED_WAIT(2000000, &rc));
    GET_TIME(&t1, &rc);
    value("TIMED_WAIT_WAITED", "2ms", t1 - t0 >= 2000000);
    CHECK("TIMED_WAIT", "zero", TIMED_WAIT(0, &rc));
    CHECK("TIMED_WAIT", "negative", TIMED_WAIT(-5, &rc));
    CHECK("TIMED_WAIT", "infinite", TIMED_WAIT(INFINITE_TIME_VALUE, &rc));
    CHECK("PERIODIC_WAIT", "aperiodic", PERIODIC_WAIT(&rc));
    CHECK("REPLENISH", "aperiodic_infinite", REPLENISH(INFINITE_TIME_VALUE, &rc));
    CHECK("SUSPEND_SELF", "timeout", SUSPEND_SELF(2000000, &rc));
    CHECK("SUSPEND_SELF", "zero", SUSPEND_SELF(0, &rc));
    CHECK("SUSPEND_SELF", "negative", SUSPEND_SELF(-5, &rc));

    /* -- preemption lock ---------------------------------------------------------------------- */
    CHECK("UNLOCK_PREEMPTION", "not_locked", UNLOCK_PREEMPTION(&level, &rc));
    CHECK("LOCK_PREEMPTION", "first", LOCK_PREEMPTION(&level, &rc));
    value("LOCK_LEVEL", "first", level);
    GET_PARTITION_STATUS(&part, &rc);
    value("PARTITION_LOCK_LEVEL", "first", part.LOCK_LEVEL);
    CHECK("TIMED_WAIT", "locked", TIMED_WAIT(1000, &rc));
    CHECK("SUSPEND_SELF", "locked", SUSPEND_SELF(1000, &rc));
    CHECK("PERIODIC_WAIT", "locked", PERIODIC_WAIT(&rc));
    for (i = 1; i < MAX_LOCK_LEVEL; i++) LOCK_PREEMPTION(&level, &rc);
    value("LOCK_LEVEL", "max", level);
    CHECK("LOCK_PREEMPTION", "at_max", LOCK_PREEMPTION(&level, &rc));
    for (i = 1; i < MAX_LOCK_LEVEL; i++) UNLOCK_PREEMPTION(&level, &rc);
    CHECK("UNLOCK_PREEMPTION", "last", UNLOCK_PREEMPTION(&level, &rc));
    value("LOCK_LEVEL", "unlocked", level);
    CHECK("LOCK_PREEMPTION", "null_level", LOCK_PREEMPTION(NULL, &rc));
    CHECK("UNLOCK_PREEMPTION", "null_level", UNLOCK_PREEMPTION(NULL, &rc));

    /* -- health monitor ----------------------------------------------------------------------- */
    CHECK("REPORT_APPLICATION_MESSAGE", "ok", REPORT_APPLICATION_MESSAGE(msg, 16, &rc));
    CHECK("REPORT_APPLICATION_MESSAGE", "max", REPORT_APPLICATION_MESSAGE(msg, MAX_ERROR_MESSAGE_SIZE, &rc));
    CHECK("REPORT_APPLICATION_MESSAGE", "too_long", REPORT_APPLICATION_MESSAGE(msg, MAX_ERROR_MESSAGE_SIZE + 1, &rc));
    CHECK("REPORT_APPLICATION_MESSAGE", "negative", REPORT_APPLICATION_MESSAGE(msg, -1, &rc));
    CHECK("REPORT_APPLICATION_MESSAGE", "null_addr", REPORT_APPLICATION_MESSAGE(NULL, 4, &rc));
    CHECK("GET_ERROR_STATUS", "not_error_handler", GET_ERROR_STATUS(&est, &rc));
    CHECK("RAISE_APPLICATION_ERROR", "wrong_code", RAISE_APPLICATION_ERROR(NUMERIC_ERROR, msg, 4, &rc));
    CHECK("RAISE_APPLICATION_ERROR", "bad_code", RAISE_APPLICATION_ERROR((ERROR_CODE_TYPE)42, msg, 4, &rc));
    CHECK("RAISE_APPLICATION_ERROR", "too_long", RAISE_APPLICATION_ERROR(APPLICATION_ERROR, msg, MAX_ERROR_MESSAGE_SIZE + 1, &rc));
    CHECK("RAISE_APPLICATION_ERROR", "negative", RAISE_APPLICATION_ERROR(APPLICATION_ERROR, msg, -1, &rc));
    CHECK("RAISE_APPLICATION_ERROR", "ok", RAISE_APPLICATION_ERROR(APPLICATION_ERROR, (MESSAGE_ADDR_TYPE)"sensor stuck", 12, &rc));
    WAIT_UNTIL("the error handler", n_seen == 1 && handler_runs == 1);
    value("ERRORS_SEEN", "raised", n_seen);
    show_seen(0, "raised");
    printf("GET_ERROR_STATUS none_pending rc=%s\n", rc_name(eh_rc[0]));
    printf("GET_ERROR_STATUS null_status rc=%s\n", rc_name(eh_rc[1]));
    printf("TIMED_WAIT in_error_handler rc=%s\n", rc_name(eh_rc[2]));
    printf("LOCK_PREEMPTION in_error_handler rc=%s\n", rc_name(eh_rc[3]));
    printf("UNLOCK_PREEMPTION in_error_handler rc=%s\n", rc_name(eh_rc[4]));
    printf("SUSPEND_SELF in_error_handler rc=%s\n", rc_name(eh_rc[5]));
    printf("GET_MY_ID in_error_handler rc=%s\n", rc_name(eh_rc[6]));
    printf("PERIODIC_WAIT in_error_handler rc=%s\n", rc_name(eh_rc[7]));
    printf("REPLENISH in_error_handler rc=%s\n", rc_name(eh_rc[8]));

    /* a deadline miss reaches the error handler too */
    CHECK("START", "misser", START(misser_id, &rc));
    WAIT_UNTIL("the deadline miss", n_seen == 2 && handler_runs == 2);
    value("ERRORS_SEEN", "deadline", n_seen);
    value("ERROR_CODE", "deadline", seen[1].code);
    value("FAILED_PROCESS_IS_MISSER", "deadline", seen[1].failed == misser_id);

    /* -- module schedules (Part 2) ------------------------------------------------------------ */
    {
        MODULE_SCHEDULE_STATUS_TYPE ms;
        SCHEDULE_ID_TYPE sid;
        CHECK("GET_MODULE_SCHEDULE_STATUS", "ok", GET_MODULE_SCHEDULE_STATUS(&ms, &rc));
        CHECK("GET_MODULE_SCHEDULE_STATUS", "null", GET_MODULE_SCHEDULE_STATUS(NULL, &rc));
        CHECK("GET_MODULE_SCHEDULE_ID", "no_config", GET_MODULE_SCHEDULE_ID("normal", &sid, &rc));
        CHECK("GET_MODULE_SCHEDULE_ID", "null_name", GET_MODULE_SCHEDULE_ID(NULL, &sid, &rc));
        CHECK("GET_MODULE_SCHEDULE_ID", "null_id", GET_MODULE_SCHEDULE_ID("normal", NULL, &rc));
        CHECK("SET_MODULE_SCHEDULE", "no_config", SET_MODULE_SCHEDULE(1, &rc));
    }

    /* -- restart: WARM_START re-runs main() with START_CONDITION = PARTITION_RESTART -------- */
    printf("SET_PARTITION_MODE warm_start_from_normal (restarting)\n");
    fflush(stdout);
    SET_PARTITION_MODE(WARM_START, &rc);
    printf("SET_PARTITION_MODE warm_start_from_normal returned rc=%s\n", rc_name(rc));
    exit(3);
}

/* ---- main: initialisation ------------------------------------------------------------------ */

static void create(const char *name, void (*entry)(void), SYSTEM_TIME_TYPE period,
                   SYSTEM_TIME_TYPE capacity, PRIORITY_TYPE prio, PROCESS_ID_TYPE *id)
{
    PROCESS_ATTRIBUTE_TYPE a;
    RETURN_CODE_TYPE rc;
    memset(&a, 0, sizeof a);
    a.ENTRY_POINT = entry;
    a.PERIOD = period;
    a.TIME_CAPACITY = capacity;
    a.STACK_SIZE = 64 * 1024;
    a.BASE_PRIORITY = prio;
    a.DEADLINE = SOFT;
    strncpy(a.NAME, name, MAX_NAME_LENGTH);
    CREATE_PROCESS(&a, id, &rc);
    printf("CREATE_PROCESS %s rc=%s\n", name, rc_name(rc));
}

int main(void)
{
    RETURN_CODE_TYPE rc;
    PROCESS_ID_TYPE id;
    PROCESS_ATTRIBUTE_TYPE a;
    PROCESS_STATUS_TYPE pst;
    PARTITION_STATUS_TYPE part;
    LOCK_LEVEL_TYPE level;

    setvbuf(stdout, NULL, _IOLBF, 0);

    GET_PARTITION_STATUS(&part, &rc);
    if (part.START_CONDITION != NORMAL_START) {
        /* Second run, after SET_PARTITION_MODE(WARM_START) in NORMAL mode. */
        value("OPERATING_MODE", "restarted", part.OPERATING_MODE);
        value("START_CONDITION", "restarted", part.START_CONDITION);
        CHECK("GET_PROCESS_ID", "after_restart", GET_PROCESS_ID("driver", &id, &rc));
        CHECK("SET_PARTITION_MODE", "bad_mode_in_warm_start", SET_PARTITION_MODE((OPERATING_MODE_TYPE)-1, &rc));
        printf("SET_PARTITION_MODE idle (exiting)\n");
        fflush(stdout);
        SET_PARTITION_MODE(IDLE, &rc);
        printf("SET_PARTITION_MODE idle returned rc=%s\n", rc_name(rc));
        return 4;
    }

    CHECK("GET_PARTITION_STATUS", "cold_start", GET_PARTITION_STATUS(&part, &rc));
    value("OPERATING_MODE", "cold_start", part.OPERATING_MODE);
    value("START_CONDITION", "cold_start", part.START_CONDITION);
    CHECK("GET_PARTITION_STATUS", "null", GET_PARTITION_STATUS(NULL, &rc));
    CHECK("SET_PARTITION_MODE", "warm_from_cold", SET_PARTITION_MODE(WARM_START, &rc));
    CHECK("GET_MY_ID", "main", GET_MY_ID(&id, &rc));
    CHECK("LOCK_PREEMPTION", "not_normal", LOCK_PREEMPTION(&level, &rc));
    CHECK("UNLOCK_PREEMPTION", "not_normal", UNLOCK_PREEMPTION(&level, &rc));
    CHECK("PERIODIC_WAIT", "main", PERIODIC_WAIT(&rc));
    CHECK("TIMED_WAIT", "main", TIMED_WAIT(1000, &rc));
    CHECK("SUSPEND_SELF", "main", SUSPEND_SELF(0, &rc));
    CHECK("REPLENISH", "main", REPLENISH(1000000, &rc));

    create("driver", driver, INFINITE_TIME_VALUE, INFINITE_TIME_VALUE, 90, &driver_id);
    create("worker", worker, INFINITE_TIME_VALUE, INFINITE_TIME_VALUE, 10, &worker_id);
    create("sleeper", sleeper, INFINITE_TIME_VALUE, INFINITE_TIME_VALUE, 11, &sleeper_id);
    create("periodic", periodic, 50000000, 50000000, 20, &periodic_id);
    create("spare", spare, INFINITE_TIME_VALUE, INFINITE_TIME_VALUE, 3, &spare_id);
    create("idle_periodic", idle_periodic, 50000000, 50000000, 4, &idle_periodic_id);
    create("misser", misser, 50000000, 50000000, 6, &misser_id);
    create("bounded", spare, INFINITE_TIME_VALUE, 10000000, 7, &bounded_id);
    {
        /* an aperiodic process with a finite time capacity (for the DELAYED_START overflow) */
        PROCESS_STATUS_TYPE b;
        GET_PROCESS_STATUS(bounded_id, &b, &rc);
        value("TIME_CAPACITY", "bounded", b.ATTRIBUTES.TIME_CAPACITY);
    }

    /* CREATE_PROCESS return codes */
    memset(&a, 0, sizeof a);
    a.ENTRY_POINT = worker;
    a.PERIOD = INFINITE_TIME_VALUE;
    a.TIME_CAPACITY = INFINITE_TIME_VALUE;
    a.BASE_PRIORITY = 10;
    a.DEADLINE = SOFT;
    strcpy(a.NAME, "worker");
    CHECK("CREATE_PROCESS", "same_name", CREATE_PROCESS(&a, &id, &rc));
    /* The standard's order: an existing name comes before bad parameters, also those only C can
       pass (a null entry point, an out-of-range deadline). */
    a.BASE_PRIORITY = MAX_PRIORITY_VALUE + 1;
    a.ENTRY_POINT = NULL;
    a.DEADLINE = (DEADLINE_TYPE)5;
    CHECK("CREATE_PROCESS", "same_name_bad_params", CREATE_PROCESS(&a, &id, &rc));
    a.BASE_PRIORITY = 10;
    a.ENTRY_POINT = worker;
    a.DEADLINE = SOFT;
    strcpy(a.NAME, "other");
    a.BASE_PRIORITY = 0;
    CHECK("CREATE_PROCESS", "priority_too_low", CREATE_PROCESS(&a, &id, &rc));
    a.BASE_PRIORITY = MAX_PRIORITY_VALUE + 1;
    CHECK("CREATE_PROCESS", "priority_too_high", CREATE_PROCESS(&a, &id, &rc));
    a.BASE_PRIORITY = 10;
    a.DEADLINE = (DEADLINE_TYPE)5;
    CHECK("CREATE_PROCESS", "bad_deadline", CREATE_PROCESS(&a, &id, &rc));
    a.DEADLINE = SOFT;
    a.PERIOD = -7;
    CHECK("CREATE_PROCESS", "bad_period", CREATE_PROCESS(&a, &id, &rc));
    a.PERIOD = 10000000;
    a.TIME_CAPACITY = 20000000;
    CHECK("CREATE_PROCESS", "capacity_above_period", CREATE_PROCESS(&a, &id, &rc));
    a.PERIOD = INFINITE_TIME_VALUE;
    a.TIME_CAPACITY = -7;
    CHECK("CREATE_PROCESS", "bad_capacity", CREATE_PROCESS(&a, &id, &rc));
    a.TIME_CAPACITY = INFINITE_TIME_VALUE;
    a.ENTRY_POINT = NULL;
    CHECK("CREATE_PROCESS", "null_entry", CREATE_PROCESS(&a, &id, &rc));
    a.ENTRY_POINT = worker;
    a.STACK_SIZE = 0xFFFFFFFFu;
    CHECK("CREATE_PROCESS", "stack_too_large", CREATE_PROCESS(&a, &id, &rc));
    a.STACK_SIZE = 0;
    memset(a.NAME, 0, sizeof a.NAME);
    CHECK("CREATE_PROCESS", "empty_name", CREATE_PROCESS(&a, &id, &rc));
    memcpy(a.NAME, "w\xff", 3);
    CHECK("CREATE_PROCESS", "not_utf8_name", CREATE_PROCESS(&a, &id, &rc));
    strcpy(a.NAME, "other");
    CHECK("CREATE_PROCESS", "null_attributes", CREATE_PROCESS(NULL, &id, &rc));
    CHECK("CREATE_PROCESS", "null_id", CREATE_PROCESS(&a, NULL, &rc));
    {
        /* fill the process table: 30-character names use the whole NAME_TYPE (no NUL) */
        int n = 0;
        char name[MAX_NAME_LENGTH + 1];
        PROCESS_ID_TYPE last = 0;
        do {
            snprintf(name, sizeof name, "filler-%023d", n);
            memcpy(a.NAME, name, MAX_NAME_LENGTH);
            CREATE_PROCESS(&a, &last, &rc);
            n++;
        } while (rc == NO_ERROR && n < 1000);
        printf("CREATE_PROCESS table_full rc=%s\n", rc_name(rc));
        value("PROCESSES", "table_full", last);
        CHECK("GET_PROCESS_ID", "full_length_name", GET_PROCESS_ID("filler-00000000000000000000000", &id, &rc));
    }

    /* lookups */
    CHECK("GET_PROCESS_ID", "known", GET_PROCESS_ID("sleeper", &id, &rc));
    value("ID_IS_SLEEPER", "main", id == sleeper_id);
    CHECK("GET_PROCESS_ID", "unknown", GET_PROCESS_ID("nobody", &id, &rc));
    CHECK("GET_PROCESS_ID", "null_name", GET_PROCESS_ID(NULL, &id, &rc));
    CHECK("GET_PROCESS_ID", "null_id", GET_PROCESS_ID("sleeper", NULL, &rc));
    CHECK("GET_PROCESS_STATUS", "dormant", GET_PROCESS_STATUS(worker_id, &pst, &rc));
    value("STATE", "created", pst.PROCESS_STATE);
    value("CURRENT_PRIORITY", "created", pst.CURRENT_PRIORITY);
    GET_PROCESS_STATUS(periodic_id, &pst, &rc);
    value("PERIOD", "periodic", pst.ATTRIBUTES.PERIOD);
    value("TIME_CAPACITY", "periodic", pst.ATTRIBUTES.TIME_CAPACITY);
    value("STACK_SIZE", "periodic", pst.ATTRIBUTES.STACK_SIZE);
    CHECK("GET_PROCESS_STATUS", "unknown_id", GET_PROCESS_STATUS(9999, &pst, &rc));
    CHECK("GET_PROCESS_STATUS", "null_status", GET_PROCESS_STATUS(worker_id, NULL, &rc));

    /* error handler */
    CHECK("CREATE_ERROR_HANDLER", "null_entry", CREATE_ERROR_HANDLER(NULL, 0, &rc));
    /* ... before the stack check (INVALID_CONFIG), with the parameters */
    CHECK("CREATE_ERROR_HANDLER", "null_entry_stack_too_large", CREATE_ERROR_HANDLER(NULL, 0xFFFFFFFFu, &rc));
    CHECK("CREATE_ERROR_HANDLER", "stack_too_large", CREATE_ERROR_HANDLER(error_handler, 0xFFFFFFFFu, &rc));
    CHECK("CREATE_ERROR_HANDLER", "ok", CREATE_ERROR_HANDLER(error_handler, 64 * 1024, &rc));
    CHECK("CREATE_ERROR_HANDLER", "twice", CREATE_ERROR_HANDLER(error_handler, 64 * 1024, &rc));

    /* start everything; the processes wait for NORMAL */
    CHECK("START", "driver", START(driver_id, &rc));
    CHECK("START", "worker", START(worker_id, &rc));
    CHECK("START", "sleeper", START(sleeper_id, &rc));
    CHECK("START", "periodic", START(periodic_id, &rc));
    CHECK("DELAYED_START", "spare", DELAYED_START(spare_id, 0, &rc));
    show_state("worker", worker_id, "started_in_cold_start");

    CHECK("SET_PARTITION_MODE", "null_rc_is_ignored", SET_PARTITION_MODE(NORMAL, NULL); rc = NO_ERROR);
    SET_PARTITION_MODE(NORMAL, &rc);
    printf("SET_PARTITION_MODE normal returned rc=%s\n", rc_name(rc));
    return 1;
}
