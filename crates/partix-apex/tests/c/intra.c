/*
 * Every return code of the intra-partition services (blackboards, buffers, semaphores, events)
 * from C, run standalone (no executive); tests/c_api.rs compares the output with intra.expected.
 *
 * Prints one line per check: "SERVICE CASE rc=NAME", "VALUE NAME N" or "STATE PROCESS CASE
 * STATE". main() runs the initialisation (COLD_START) checks, fills the blackboard and buffer
 * tables to their maximum, creates "driver" (priority 20), "waiter", "reader1" and "reader2"
 * (priority 10) and enters NORMAL mode. The driver checks creation in NORMAL mode, time-outs and
 * the preemption lock, then releases the waiter from each kind of object in turn (the waiter
 * prints what it got), releases the two readers with a DISPLAY_BLACKBOARD from memory inside the
 * first one's buffer (the driver prints what each got), and ends the program with
 * SET_PARTITION_MODE(IDLE) (exit status 0). Waiting for the other process polls
 * with TIMED_WAIT (1 ms) up to 10 s, so the output does not depend on timing.
 */
#define _POSIX_C_SOURCE 200809L

#include <arinc653/apex.h>

#include <stdio.h>
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

#define CHECK(SERVICE, CASE, ...)                                                    \
    do {                                                                             \
        RETURN_CODE_TYPE rc = (RETURN_CODE_TYPE)99;                                  \
        __VA_ARGS__;                                                                 \
        printf("%s %s rc=%s\n", SERVICE, CASE, rc_name(rc));                         \
        fflush(stdout);                                                              \
    } while (0)

static void value(const char *name, long long v)
{
    printf("VALUE %s %lld\n", name, v);
    fflush(stdout);
}

#define WAIT_UNTIL(WHAT, COND)                                                       \
    do {                                                                             \
        int tries_ = 0;                                                              \
        RETURN_CODE_TYPE wrc_;                                                       \
        while (!(COND) && tries_++ < 10000) TIMED_WAIT(1000000, &wrc_);              \
        if (!(COND)) { printf("TIMEOUT waiting for %s\n", WHAT); fflush(stdout); }   \
    } while (0)

#define MS 1000000LL

/*
 * CHECK a wait that must time out after TO ns, then print "VALUE SERVICE_not_before_timeout 1" if
 * it returned no earlier than TO after the call (GET_TIME before and after: the clock the time-out
 * runs on; a lower bound only, how late it returns depends on the scheduling), else 0 and the
 * time it waited.
 */
#define CHECK_TIMES_OUT(SERVICE, CASE, TO, ...)                                       \
    do {                                                                             \
        SYSTEM_TIME_TYPE t0_ = 0, t1_ = 0;                                           \
        RETURN_CODE_TYPE trc_;                                                       \
        GET_TIME(&t0_, &trc_);                                                       \
        CHECK(SERVICE, CASE, __VA_ARGS__);                                           \
        GET_TIME(&t1_, &trc_);                                                       \
        if (t1_ - t0_ >= (TO))                                                       \
            printf("VALUE %s_not_before_timeout 1\n", SERVICE);                      \
        else                                                                         \
            printf("VALUE %s_not_before_timeout 0 (waited %lld ns of %lld)\n",       \
                   SERVICE, (long long)(t1_ - t0_), (long long)(TO));                \
        fflush(stdout);                                                              \
    } while (0)

static SEMAPHORE_ID_TYPE sem;
static EVENT_ID_TYPE ev;
static BLACKBOARD_ID_TYPE bb;
static BUFFER_ID_TYPE buf;
static PROCESS_ID_TYPE driver_id, waiter_id, reader1_id, reader2_id;

static PROCESS_STATE_TYPE state_of(PROCESS_ID_TYPE pid)
{
    PROCESS_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    GET_PROCESS_STATUS(pid, &st, &rc);
    return rc == NO_ERROR ? st.PROCESS_STATE : (PROCESS_STATE_TYPE)99;
}

static void show_state(const char *c)
{
    printf("STATE waiter %s %s\n", c, state_name(state_of(waiter_id)));
    fflush(stdout);
}

static int sem_waiting(void)
{
    SEMAPHORE_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    GET_SEMAPHORE_STATUS(sem, &st, &rc);
    return rc == NO_ERROR ? st.WAITING_PROCESSES : -1;
}

static int ev_waiting(void)
{
    EVENT_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    GET_EVENT_STATUS(ev, &st, &rc);
    return rc == NO_ERROR ? st.WAITING_PROCESSES : -1;
}

static int bb_waiting(void)
{
    BLACKBOARD_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    GET_BLACKBOARD_STATUS(bb, &st, &rc);
    return rc == NO_ERROR ? st.WAITING_PROCESSES : -1;
}

static int buf_waiting(void)
{
    BUFFER_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    GET_BUFFER_STATUS(buf, &st, &rc);
    return rc == NO_ERROR ? st.WAITING_PROCESSES : -1;
}

/* ---- processes ---------------------------------------------------------------------------- */

static void waiter(void)
{
    APEX_BYTE m[16];
    MESSAGE_SIZE_TYPE len = -1;
    CHECK("WAITER WAIT_EVENT", "released", WAIT_EVENT(ev, INFINITE_TIME_VALUE, &rc));
    CHECK("WAITER READ_BLACKBOARD", "released", READ_BLACKBOARD(bb, INFINITE_TIME_VALUE, m, &len, &rc));
    printf("WAITER READ_BLACKBOARD got %.*s\n", (int)len, (const char *)m);
    CHECK("WAITER RECEIVE_BUFFER", "released", RECEIVE_BUFFER(buf, 5000 * MS, m, &len, &rc));
    printf("WAITER RECEIVE_BUFFER got %.*s\n", (int)len, (const char *)m);
    CHECK("WAITER WAIT_SEMAPHORE", "released", WAIT_SEMAPHORE(sem, INFINITE_TIME_VALUE, &rc));
    for (;;) {
        RETURN_CODE_TYPE rc;
        TIMED_WAIT(1000 * MS, &rc);
    }
}

/*
 * Two readers of the blackboard for DISPLAY_BLACKBOARD from memory that overlaps the first
 * reader's buffer (r1_buf + 2): both must get the message as displayed. Copied to each reader
 * from the caller's memory, the second got it as the first copy had changed it (review 27).
 */
static APEX_BYTE r1_buf[16] = "xxABCDEF";
static APEX_BYTE r2_buf[16];
static MESSAGE_SIZE_TYPE r1_len = -1, r2_len = -1;
static int readers_done;

static void reader(APEX_BYTE *m, MESSAGE_SIZE_TYPE *len)
{
    RETURN_CODE_TYPE rc;
    READ_BLACKBOARD(bb, INFINITE_TIME_VALUE, m, len, &rc);
    if (rc != NO_ERROR) *len = -2;
    __atomic_add_fetch(&readers_done, 1, __ATOMIC_SEQ_CST);
    for (;;) TIMED_WAIT(1000 * MS, &rc);
}

static void reader1(void) { reader(r1_buf, &r1_len); }

static void reader2(void) { reader(r2_buf, &r2_len); }

static void show_read(const char *who, const APEX_BYTE *m, MESSAGE_SIZE_TYPE len)
{
    if (len >= 0 && len <= 16)
        printf("OVERLAP %s got %.*s\n", who, (int)len, (const char *)m);
    else
        printf("OVERLAP %s length %lld\n", who, (long long)len);
    fflush(stdout);
}

static void driver(void)
{
    APEX_BYTE m[16];
    MESSAGE_SIZE_TYPE len = -1;
    SEMAPHORE_ID_TYPE s2;
    EVENT_ID_TYPE e2;
    BLACKBOARD_ID_TYPE b2;
    BUFFER_ID_TYPE q2;

    CHECK("CREATE_SEMAPHORE", "normal", CREATE_SEMAPHORE("S2", 0, 1, FIFO, &s2, &rc));
    CHECK("CREATE_SEMAPHORE", "normal_bad_discipline", CREATE_SEMAPHORE("S2", 0, 1, (QUEUING_DISCIPLINE_TYPE)7, &s2, &rc));
    CHECK("CREATE_EVENT", "normal", CREATE_EVENT("E2", &e2, &rc));
    CHECK("CREATE_BLACKBOARD", "normal_full", CREATE_BLACKBOARD("B2", 8, &b2, &rc));
    CHECK("CREATE_BUFFER", "normal_full", CREATE_BUFFER("Q2", 8, 1, FIFO, &q2, &rc));
    {
        /* Creation in NORMAL with room in the process table and no error handler yet: the mode
           is what refuses them (services.c cannot reach it: its table is full and its handler
           exists). A null entry point is a parameter error, checked before the mode. */
        PROCESS_ATTRIBUTE_TYPE a;
        PROCESS_ID_TYPE pid;
        memset(&a, 0, sizeof a);
        strncpy(a.NAME, "late", MAX_NAME_LENGTH);
        a.ENTRY_POINT = (SYSTEM_ADDRESS_TYPE)waiter;
        a.PERIOD = INFINITE_TIME_VALUE;
        a.TIME_CAPACITY = INFINITE_TIME_VALUE;
        a.BASE_PRIORITY = 5;
        a.DEADLINE = SOFT;
        CHECK("CREATE_PROCESS", "normal", CREATE_PROCESS(&a, &pid, &rc));
        CHECK("CREATE_ERROR_HANDLER", "normal", CREATE_ERROR_HANDLER((SYSTEM_ADDRESS_TYPE)waiter, 0, &rc));
        CHECK("CREATE_ERROR_HANDLER", "normal_null_entry", CREATE_ERROR_HANDLER(NULL, 0, &rc));
    }

    CHECK_TIMES_OUT("WAIT_SEMAPHORE", "timeout", 20 * MS, WAIT_SEMAPHORE(sem, 20 * MS, &rc));
    CHECK_TIMES_OUT("WAIT_EVENT", "timeout", 20 * MS, WAIT_EVENT(ev, 20 * MS, &rc));
    CHECK_TIMES_OUT("READ_BLACKBOARD", "timeout", 20 * MS, READ_BLACKBOARD(bb, 20 * MS, m, &len, &rc));
    CHECK_TIMES_OUT("RECEIVE_BUFFER", "timeout", 20 * MS, RECEIVE_BUFFER(buf, 20 * MS, m, &len, &rc));
    CHECK("SEND_BUFFER", "fill", SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"f1", 2, 0, &rc));
    CHECK("SEND_BUFFER", "fill", SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"f2", 2, 0, &rc));
    CHECK_TIMES_OUT("SEND_BUFFER", "full_timeout", 20 * MS, SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"f3", 2, 20 * MS, &rc));
    CHECK("RECEIVE_BUFFER", "drain", RECEIVE_BUFFER(buf, 0, m, &len, &rc));
    CHECK("RECEIVE_BUFFER", "drain", RECEIVE_BUFFER(buf, 0, m, &len, &rc));

    {
        LOCK_LEVEL_TYPE lvl;
        CHECK("LOCK_PREEMPTION", "ok", LOCK_PREEMPTION(&lvl, &rc));
        CHECK("WAIT_SEMAPHORE", "locked", WAIT_SEMAPHORE(sem, 10 * MS, &rc));
        CHECK("WAIT_EVENT", "locked", WAIT_EVENT(ev, INFINITE_TIME_VALUE, &rc));
        CHECK("READ_BLACKBOARD", "locked", READ_BLACKBOARD(bb, 10 * MS, m, &len, &rc));
        CHECK("RECEIVE_BUFFER", "locked", RECEIVE_BUFFER(buf, 10 * MS, m, &len, &rc));
        CHECK("UNLOCK_PREEMPTION", "ok", UNLOCK_PREEMPTION(&lvl, &rc));
    }

    CHECK("START", "waiter", START(waiter_id, &rc));
    WAIT_UNTIL("waiter on the event", ev_waiting() == 1);
    show_state("on_event");
    CHECK("SET_EVENT", "releases", SET_EVENT(ev, &rc));
    show_state("released");
    CHECK("RESET_EVENT", "ok", RESET_EVENT(ev, &rc));

    WAIT_UNTIL("waiter on the blackboard", bb_waiting() == 1);
    show_state("on_blackboard");
    CHECK("DISPLAY_BLACKBOARD", "releases", DISPLAY_BLACKBOARD(bb, (MESSAGE_ADDR_TYPE)"news", 4, &rc));
    CHECK("CLEAR_BLACKBOARD", "ok", CLEAR_BLACKBOARD(bb, &rc));

    WAIT_UNTIL("waiter on the buffer", buf_waiting() == 1);
    show_state("on_buffer");
    CHECK("SEND_BUFFER", "to_waiter", SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"mail", 4, 0, &rc));

    WAIT_UNTIL("waiter on the semaphore", sem_waiting() == 1);
    show_state("on_semaphore");
    CHECK("SIGNAL_SEMAPHORE", "releases", SIGNAL_SEMAPHORE(sem, &rc));
    WAIT_UNTIL("the waiter's last line", state_of(waiter_id) == WAITING && sem_waiting() == 0);
    show_state("done");

    CHECK("START", "reader1", START(reader1_id, &rc));
    WAIT_UNTIL("reader1 on the blackboard", bb_waiting() == 1);
    CHECK("START", "reader2", START(reader2_id, &rc));
    WAIT_UNTIL("reader2 on the blackboard", bb_waiting() == 2);
    CHECK("DISPLAY_BLACKBOARD", "overlapping_reader", DISPLAY_BLACKBOARD(bb, (MESSAGE_ADDR_TYPE)(r1_buf + 2), 6, &rc));
    WAIT_UNTIL("both readers", __atomic_load_n(&readers_done, __ATOMIC_SEQ_CST) == 2);
    show_read("reader1", r1_buf, r1_len);
    show_read("reader2", r2_buf, r2_len);
    CHECK("SET_PARTITION_MODE", "IDLE", SET_PARTITION_MODE(IDLE, &rc));
}

/* ---- initialisation ------------------------------------------------------------------------- */

static void create_process(const char *name, void (*entry)(void), PRIORITY_TYPE prio, PROCESS_ID_TYPE *id)
{
    PROCESS_ATTRIBUTE_TYPE a;
    RETURN_CODE_TYPE rc;
    memset(&a, 0, sizeof a);
    strncpy(a.NAME, name, MAX_NAME_LENGTH);
    a.ENTRY_POINT = (SYSTEM_ADDRESS_TYPE)entry;
    a.STACK_SIZE = 0;
    a.BASE_PRIORITY = prio;
    a.PERIOD = INFINITE_TIME_VALUE;
    a.TIME_CAPACITY = INFINITE_TIME_VALUE;
    a.DEADLINE = SOFT;
    CREATE_PROCESS(&a, id, &rc);
    if (rc != NO_ERROR) printf("CREATE_PROCESS %s failed: %s\n", name, rc_name(rc));
}

int main(void)
{
    APEX_BYTE m[16];
    MESSAGE_SIZE_TYPE len = -1;
    SEMAPHORE_ID_TYPE id;
    SEMAPHORE_STATUS_TYPE sst;
    EVENT_STATUS_TYPE est;
    BLACKBOARD_STATUS_TYPE bst;
    BUFFER_STATUS_TYPE qst;
    char name[MAX_NAME_LENGTH];
    int i, created;

    /* ---- semaphores */
    CHECK("CREATE_SEMAPHORE", "ok", CREATE_SEMAPHORE("S", 0, 2, PRIORITY, &sem, &rc));
    CHECK("CREATE_SEMAPHORE", "same_name", CREATE_SEMAPHORE("S", 0, 2, PRIORITY, &id, &rc));
    CHECK("CREATE_SEMAPHORE", "current_gt_max", CREATE_SEMAPHORE("S1", 3, 2, FIFO, &id, &rc));
    CHECK("CREATE_SEMAPHORE", "negative", CREATE_SEMAPHORE("S1", -1, 2, FIFO, &id, &rc));
    CHECK("CREATE_SEMAPHORE", "max_too_big", CREATE_SEMAPHORE("S1", 0, MAX_SEMAPHORE_VALUE + 1, FIFO, &id, &rc));
    CHECK("CREATE_SEMAPHORE", "bad_discipline", CREATE_SEMAPHORE("S1", 0, 2, (QUEUING_DISCIPLINE_TYPE)7, &id, &rc));
    /* The standard's order: an existing name (NO_ACTION) before the discipline (INVALID_PARAM). */
    CHECK("CREATE_SEMAPHORE", "same_name_bad_discipline", CREATE_SEMAPHORE("S", 0, 2, (QUEUING_DISCIPLINE_TYPE)7, &id, &rc));
    CHECK("CREATE_SEMAPHORE", "null_id", CREATE_SEMAPHORE("S1", 0, 2, FIFO, NULL, &rc));
    CHECK("GET_SEMAPHORE_ID", "ok", GET_SEMAPHORE_ID("S", &id, &rc));
    value("same_semaphore_id", id == sem);
    CHECK("GET_SEMAPHORE_ID", "unknown", GET_SEMAPHORE_ID("nope", &id, &rc));
    CHECK("WAIT_SEMAPHORE", "zero_timeout", WAIT_SEMAPHORE(sem, 0, &rc));
    CHECK("WAIT_SEMAPHORE", "init", WAIT_SEMAPHORE(sem, 10 * MS, &rc));
    CHECK("WAIT_SEMAPHORE", "bad_timeout", WAIT_SEMAPHORE(sem, -3, &rc));
    CHECK("WAIT_SEMAPHORE", "bad_id", WAIT_SEMAPHORE(99, 0, &rc));
    CHECK("SIGNAL_SEMAPHORE", "ok", SIGNAL_SEMAPHORE(sem, &rc));
    CHECK("SIGNAL_SEMAPHORE", "ok", SIGNAL_SEMAPHORE(sem, &rc));
    CHECK("SIGNAL_SEMAPHORE", "at_max", SIGNAL_SEMAPHORE(sem, &rc));
    CHECK("SIGNAL_SEMAPHORE", "bad_id", SIGNAL_SEMAPHORE(0, &rc));
    CHECK("GET_SEMAPHORE_STATUS", "ok", GET_SEMAPHORE_STATUS(sem, &sst, &rc));
    value("semaphore_current", sst.CURRENT_VALUE);
    value("semaphore_maximum", sst.MAXIMUM_VALUE);
    value("semaphore_waiting", sst.WAITING_PROCESSES);
    CHECK("GET_SEMAPHORE_STATUS", "bad_id", GET_SEMAPHORE_STATUS(99, &sst, &rc));
    CHECK("GET_SEMAPHORE_STATUS", "null", GET_SEMAPHORE_STATUS(sem, NULL, &rc));
    CHECK("WAIT_SEMAPHORE", "ok", WAIT_SEMAPHORE(sem, 0, &rc));
    CHECK("WAIT_SEMAPHORE", "ok", WAIT_SEMAPHORE(sem, INFINITE_TIME_VALUE, &rc));

    /* ---- events */
    CHECK("CREATE_EVENT", "ok", CREATE_EVENT("E", &ev, &rc));
    CHECK("CREATE_EVENT", "same_name", CREATE_EVENT("E", &id, &rc));
    CHECK("CREATE_EVENT", "null_id", CREATE_EVENT("E1", NULL, &rc));
    CHECK("GET_EVENT_ID", "ok", GET_EVENT_ID("E", &id, &rc));
    CHECK("GET_EVENT_ID", "unknown", GET_EVENT_ID("nope", &id, &rc));
    CHECK("WAIT_EVENT", "down", WAIT_EVENT(ev, 0, &rc));
    CHECK("WAIT_EVENT", "init", WAIT_EVENT(ev, 10 * MS, &rc));
    CHECK("SET_EVENT", "ok", SET_EVENT(ev, &rc));
    CHECK("WAIT_EVENT", "up", WAIT_EVENT(ev, 10 * MS, &rc));
    CHECK("GET_EVENT_STATUS", "ok", GET_EVENT_STATUS(ev, &est, &rc));
    value("event_up", est.EVENT_STATE == UP);
    CHECK("RESET_EVENT", "ok", RESET_EVENT(ev, &rc));
    CHECK("GET_EVENT_STATUS", "ok", GET_EVENT_STATUS(ev, &est, &rc));
    value("event_down", est.EVENT_STATE == DOWN);
    CHECK("SET_EVENT", "bad_id", SET_EVENT(42, &rc));
    CHECK("RESET_EVENT", "bad_id", RESET_EVENT(42, &rc));
    CHECK("WAIT_EVENT", "bad_id", WAIT_EVENT(42, 0, &rc));
    CHECK("GET_EVENT_STATUS", "bad_id", GET_EVENT_STATUS(42, &est, &rc));

    /* ---- names are UTF-8 bytes: a 30-byte UTF-8 name is kept as it is; bytes that are not UTF-8
     * are INVALID_PARAM (so two different ones never name the same object) */
    {
        char e_acute[MAX_NAME_LENGTH]; /* 15 x U+00E9: 30 bytes, not NUL-terminated */
        EVENT_ID_TYPE e30 = -1;
        for (i = 0; i < MAX_NAME_LENGTH; i += 2) {
            e_acute[i] = (char)0xc3;
            e_acute[i + 1] = (char)0xa9;
        }
        CHECK("CREATE_EVENT", "utf8_30_bytes", CREATE_EVENT(e_acute, &e30, &rc));
        CHECK("GET_EVENT_ID", "utf8_30_bytes", GET_EVENT_ID(e_acute, &id, &rc));
        value("utf8_30_bytes_same_id", id == e30);
        CHECK("CREATE_EVENT", "not_utf8", CREATE_EVENT("\xff", &id, &rc));
        CHECK("CREATE_EVENT", "other_not_utf8", CREATE_EVENT("\xfe", &id, &rc));
        CHECK("GET_EVENT_ID", "not_utf8", GET_EVENT_ID("\xfe", &id, &rc));
        CHECK("CREATE_SEMAPHORE", "not_utf8", CREATE_SEMAPHORE("S\xe9", 0, 1, FIFO, &id, &rc));
        CHECK("GET_SEMAPHORE_ID", "not_utf8", GET_SEMAPHORE_ID("S\xe8", &id, &rc));
    }

    /* ---- blackboards */
    CHECK("CREATE_BLACKBOARD", "ok", CREATE_BLACKBOARD("B", 16, &bb, &rc));
    CHECK("CREATE_BLACKBOARD", "same_name", CREATE_BLACKBOARD("B", 16, &id, &rc));
    CHECK("CREATE_BLACKBOARD", "size_0", CREATE_BLACKBOARD("B1", 0, &id, &rc));
    CHECK("CREATE_BLACKBOARD", "size_negative", CREATE_BLACKBOARD("B1", -4, &id, &rc));
    CHECK("CREATE_BLACKBOARD", "size_too_big", CREATE_BLACKBOARD("B1", SYSTEM_LIMIT_MESSAGE_SIZE + 1, &id, &rc));
    CHECK("GET_BLACKBOARD_ID", "ok", GET_BLACKBOARD_ID("B", &id, &rc));
    CHECK("GET_BLACKBOARD_ID", "unknown", GET_BLACKBOARD_ID("nope", &id, &rc));
    CHECK("READ_BLACKBOARD", "empty", READ_BLACKBOARD(bb, 0, m, &len, &rc));
    value("read_empty_length", len);
    CHECK("READ_BLACKBOARD", "init", READ_BLACKBOARD(bb, 10 * MS, m, &len, &rc));
    CHECK("READ_BLACKBOARD", "null_length", READ_BLACKBOARD(bb, 0, m, NULL, &rc));
    CHECK("READ_BLACKBOARD", "null_addr", READ_BLACKBOARD(bb, 0, NULL, &len, &rc));
    CHECK("DISPLAY_BLACKBOARD", "length_0", DISPLAY_BLACKBOARD(bb, m, 0, &rc));
    CHECK("DISPLAY_BLACKBOARD", "too_long", DISPLAY_BLACKBOARD(bb, m, 17, &rc));
    CHECK("DISPLAY_BLACKBOARD", "null_addr", DISPLAY_BLACKBOARD(bb, NULL, 4, &rc));
    CHECK("DISPLAY_BLACKBOARD", "bad_id", DISPLAY_BLACKBOARD(7, m, 4, &rc));
    CHECK("DISPLAY_BLACKBOARD", "ok", DISPLAY_BLACKBOARD(bb, (MESSAGE_ADDR_TYPE)"hello", 5, &rc));
    CHECK("READ_BLACKBOARD", "ok", READ_BLACKBOARD(bb, 0, m, &len, &rc));
    printf("READ_BLACKBOARD got %.*s\n", (int)len, (const char *)m);
    CHECK("GET_BLACKBOARD_STATUS", "ok", GET_BLACKBOARD_STATUS(bb, &bst, &rc));
    value("blackboard_occupied", bst.EMPTY_INDICATOR == OCCUPIED);
    value("blackboard_max", bst.MAX_MESSAGE_SIZE);
    CHECK("CLEAR_BLACKBOARD", "ok", CLEAR_BLACKBOARD(bb, &rc));
    CHECK("CLEAR_BLACKBOARD", "bad_id", CLEAR_BLACKBOARD(7, &rc));
    CHECK("GET_BLACKBOARD_STATUS", "ok", GET_BLACKBOARD_STATUS(bb, &bst, &rc));
    value("blackboard_empty", bst.EMPTY_INDICATOR == EMPTY);
    CHECK("GET_BLACKBOARD_STATUS", "bad_id", GET_BLACKBOARD_STATUS(7, &bst, &rc));

    /* ---- buffers */
    CHECK("CREATE_BUFFER", "ok", CREATE_BUFFER("Q", 8, 2, FIFO, &buf, &rc));
    CHECK("CREATE_BUFFER", "same_name", CREATE_BUFFER("Q", 8, 2, FIFO, &id, &rc));
    CHECK("CREATE_BUFFER", "size_0", CREATE_BUFFER("Q1", 0, 2, FIFO, &id, &rc));
    CHECK("CREATE_BUFFER", "nb_0", CREATE_BUFFER("Q1", 8, 0, FIFO, &id, &rc));
    CHECK("CREATE_BUFFER", "nb_too_big", CREATE_BUFFER("Q1", 8, SYSTEM_LIMIT_NUMBER_OF_MESSAGES + 1, FIFO, &id, &rc));
    CHECK("CREATE_BUFFER", "bad_discipline", CREATE_BUFFER("Q1", 8, 2, (QUEUING_DISCIPLINE_TYPE)2, &id, &rc));
    CHECK("CREATE_BUFFER", "same_name_bad_discipline", CREATE_BUFFER("Q", 8, 2, (QUEUING_DISCIPLINE_TYPE)7, &id, &rc));
    CHECK("GET_BUFFER_ID", "ok", GET_BUFFER_ID("Q", &id, &rc));
    CHECK("GET_BUFFER_ID", "unknown", GET_BUFFER_ID("nope", &id, &rc));
    CHECK("RECEIVE_BUFFER", "empty", RECEIVE_BUFFER(buf, 0, m, &len, &rc));
    CHECK("RECEIVE_BUFFER", "init", RECEIVE_BUFFER(buf, 10 * MS, m, &len, &rc));
    CHECK("RECEIVE_BUFFER", "bad_id", RECEIVE_BUFFER(9, 0, m, &len, &rc));
    CHECK("SEND_BUFFER", "too_long", SEND_BUFFER(buf, m, 9, 0, &rc));
    CHECK("SEND_BUFFER", "length_0", SEND_BUFFER(buf, m, 0, 0, &rc));
    CHECK("SEND_BUFFER", "ok", SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"one", 3, 0, &rc));
    CHECK("SEND_BUFFER", "ok", SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"two", 3, 0, &rc));
    CHECK("SEND_BUFFER", "full", SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"three", 5, 0, &rc));
    CHECK("SEND_BUFFER", "full_init", SEND_BUFFER(buf, (MESSAGE_ADDR_TYPE)"three", 5, 10 * MS, &rc));
    CHECK("GET_BUFFER_STATUS", "ok", GET_BUFFER_STATUS(buf, &qst, &rc));
    value("buffer_nb", qst.NB_MESSAGE);
    value("buffer_max_nb", qst.MAX_NB_MESSAGE);
    value("buffer_max_size", qst.MAX_MESSAGE_SIZE);
    CHECK("RECEIVE_BUFFER", "ok", RECEIVE_BUFFER(buf, 0, m, &len, &rc));
    printf("RECEIVE_BUFFER got %.*s\n", (int)len, (const char *)m);
    CHECK("RECEIVE_BUFFER", "ok", RECEIVE_BUFFER(buf, 0, m, &len, &rc));
    printf("RECEIVE_BUFFER got %.*s\n", (int)len, (const char *)m);
    CHECK("GET_BUFFER_STATUS", "bad_id", GET_BUFFER_STATUS(9, &qst, &rc));

    /* ---- implementation maxima: fill the blackboard and buffer tables */
    created = 2; /* B and Q */
    for (i = 1; i < MAX_NUMBER_OF_BLACKBOARDS; i++) {
        RETURN_CODE_TYPE rc;
        snprintf(name, sizeof name, "b%d", i);
        CREATE_BLACKBOARD(name, 4, &id, &rc);
        if (rc == NO_ERROR) created++;
    }
    for (i = 1; i < MAX_NUMBER_OF_BUFFERS; i++) {
        RETURN_CODE_TYPE rc;
        snprintf(name, sizeof name, "q%d", i);
        CREATE_BUFFER(name, 4, 1, FIFO, &id, &rc);
        if (rc == NO_ERROR) created++;
    }
    value("created", created);
    CHECK("CREATE_BLACKBOARD", "full", CREATE_BLACKBOARD("extra", 4, &id, &rc));
    CHECK("CREATE_BLACKBOARD", "full_same_name", CREATE_BLACKBOARD("B", 16, &id, &rc));
    CHECK("CREATE_BUFFER", "full", CREATE_BUFFER("extra", 4, 1, FIFO, &id, &rc));
    CHECK("CREATE_BUFFER", "full_bad_discipline", CREATE_BUFFER("extra", 4, 1, (QUEUING_DISCIPLINE_TYPE)7, &id, &rc));

    create_process("driver", driver, 20, &driver_id);
    create_process("waiter", waiter, 10, &waiter_id);
    create_process("reader1", reader1, 10, &reader1_id);
    create_process("reader2", reader2, 10, &reader2_id);
    CHECK("START", "driver", START(driver_id, &rc));
    CHECK("SET_PARTITION_MODE", "NORMAL", SET_PARTITION_MODE(NORMAL, &rc));
    return 1;
}
