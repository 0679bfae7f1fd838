/*
 * Every return code of every sampling and queuing port service, from C, in a partition started
 * by the real executive (crates/partix-runtime/tests/ports_c.rs, module
 * crates/partix-runtime/tests/ports/codes.xml: unconnected ports S_SRC, S_DST, S_LATE, Q_SRC,
 * Q_DST, Q_LATE; OTHER_PORT belongs to another partition).
 *
 * Appends one line per check, "SERVICE CASE rc=NAME" (or "VALUE NAME N"), to the file argv[1];
 * the test compares the lines with ports_codes.expected. main() runs the initialisation checks
 * and creates the error handler, then the process "driver" runs the NORMAL-mode ones, raises an
 * application error (the handler's queuing waits) and writes "END".
 */
#define _POSIX_C_SOURCE 200809L

#include <arinc653/apex.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;

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

#define CHECK(SERVICE, CASE, ...)                                                    \
    do {                                                                             \
        RETURN_CODE_TYPE rc = (RETURN_CODE_TYPE)99;                                  \
        __VA_ARGS__;                                                                 \
        fprintf(out, "%s %s rc=%s\n", SERVICE, CASE, rc_name(rc));                   \
        fflush(out);                                                                 \
    } while (0)

#define VALUE(NAME, V)                                                               \
    do {                                                                             \
        fprintf(out, "VALUE %s %lld\n", NAME, (long long)(V));                       \
        fflush(out);                                                                 \
    } while (0)

#define MS 1000000LL

static SAMPLING_PORT_ID_TYPE s_src, s_dst;
static QUEUING_PORT_ID_TYPE q_src, q_dst;

/* The error handler may not wait: a queuing wait with a time-out answers INVALID_MODE there,
 * one with time-out 0 NOT_AVAILABLE as anywhere (Q_SRC is full, Q_DST empty). It records the
 * codes; the driver prints them once it has run. */
static RETURN_CODE_TYPE eh_rc[6];
static volatile int eh_done = 0;

static void error_handler(void)
{
    ERROR_STATUS_TYPE st;
    RETURN_CODE_TYPE rc;
    APEX_BYTE m[8];
    MESSAGE_SIZE_TYPE n;

    GET_ERROR_STATUS(&st, &rc);
    memset(m, 'e', sizeof m);
    SEND_QUEUING_MESSAGE(q_src, m, 1, 10 * MS, &eh_rc[0]);
    SEND_QUEUING_MESSAGE(q_src, m, 1, INFINITE_TIME_VALUE, &eh_rc[1]);
    SEND_QUEUING_MESSAGE(q_src, m, 1, 0, &eh_rc[2]);
    RECEIVE_QUEUING_MESSAGE(q_dst, 10 * MS, m, &n, &eh_rc[3]);
    RECEIVE_QUEUING_MESSAGE(q_dst, INFINITE_TIME_VALUE, m, &n, &eh_rc[4]);
    RECEIVE_QUEUING_MESSAGE(q_dst, 0, m, &n, &eh_rc[5]);
    eh_done = 1;
    STOP_SELF();
}

static void driver(void)
{
    SAMPLING_PORT_ID_TYPE sid;
    QUEUING_PORT_ID_TYPE qid;
    APEX_BYTE buf[16];
    MESSAGE_SIZE_TYPE len;
    LOCK_LEVEL_TYPE level;

    CHECK("CREATE_SAMPLING_PORT", "normal_mode",
          CREATE_SAMPLING_PORT("S_LATE", 8, SOURCE, 100 * MS, &sid, &rc));
    CHECK("CREATE_QUEUING_PORT", "normal_mode",
          CREATE_QUEUING_PORT("Q_LATE", 8, 4, DESTINATION, FIFO, &qid, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "full_timeout_30ms",
          SEND_QUEUING_MESSAGE(q_src, buf, 1, 30 * MS, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "empty_timeout_30ms",
          RECEIVE_QUEUING_MESSAGE(q_dst, 30 * MS, buf, &len, &rc));
    CHECK("LOCK_PREEMPTION", "lock", LOCK_PREEMPTION(&level, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "full_locked",
          SEND_QUEUING_MESSAGE(q_src, buf, 1, 30 * MS, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "empty_locked",
          RECEIVE_QUEUING_MESSAGE(q_dst, 30 * MS, buf, &len, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "full_locked_timeout_0",
          SEND_QUEUING_MESSAGE(q_src, buf, 1, 0, &rc));
    CHECK("UNLOCK_PREEMPTION", "unlock", UNLOCK_PREEMPTION(&level, &rc));
    {
        static const char *const eh_case[6][2] = {
            {"SEND_QUEUING_MESSAGE", "full_error_handler_timeout_10ms"},
            {"SEND_QUEUING_MESSAGE", "full_error_handler_infinite"},
            {"SEND_QUEUING_MESSAGE", "full_error_handler_timeout_0"},
            {"RECEIVE_QUEUING_MESSAGE", "empty_error_handler_timeout_10ms"},
            {"RECEIVE_QUEUING_MESSAGE", "empty_error_handler_infinite"},
            {"RECEIVE_QUEUING_MESSAGE", "empty_error_handler_timeout_0"},
        };
        RETURN_CODE_TYPE wrc;
        int k;
        CHECK("RAISE_APPLICATION_ERROR", "to_error_handler",
              RAISE_APPLICATION_ERROR(APPLICATION_ERROR, (MESSAGE_ADDR_TYPE) "ports", 5, &rc));
        for (k = 0; k < 5000 && !eh_done; k++) {
            TIMED_WAIT(1 * MS, &wrc);
        }
        VALUE("ERROR_HANDLER_ran", eh_done);
        for (k = 0; k < 6; k++) {
            fprintf(out, "%s %s rc=%s\n", eh_case[k][0], eh_case[k][1],
                    eh_done ? rc_name(eh_rc[k]) : "NOT_RUN");
        }
        fflush(out);
    }
    fprintf(out, "END\n");
    fflush(out);
    for (;;) {
        RETURN_CODE_TYPE rc;
        TIMED_WAIT(1000 * MS, &rc);
    }
}

int main(int argc, char **argv)
{
    SAMPLING_PORT_ID_TYPE sid = 0;
    QUEUING_PORT_ID_TYPE qid = 0;
    SAMPLING_PORT_STATUS_TYPE ss;
    QUEUING_PORT_STATUS_TYPE qs;
    APEX_BYTE buf[16], big[17];
    MESSAGE_SIZE_TYPE len = 0;
    VALIDITY_TYPE validity = VALID;
    PROCESS_ID_TYPE pid;
    RETURN_CODE_TYPE rc;
    int i;

    if (argc < 2 || !(out = fopen(argv[1], "a"))) {
        return 2;
    }
    memset(big, 0, sizeof big);
    memset(buf, 'x', sizeof buf);

    /* CREATE_SAMPLING_PORT */
    CHECK("CREATE_SAMPLING_PORT", "unknown_name",
          CREATE_SAMPLING_PORT("NOPE", 16, SOURCE, 100 * MS, &sid, &rc));
    /* A name that is not UTF-8 cannot be configured: no such port. */
    CHECK("CREATE_SAMPLING_PORT", "not_utf8_name",
          CREATE_SAMPLING_PORT("S_\xff", 16, SOURCE, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "other_partitions_port",
          CREATE_SAMPLING_PORT("OTHER_PORT", 16, SOURCE, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "wrong_size",
          CREATE_SAMPLING_PORT("S_SRC", 17, SOURCE, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "negative_size",
          CREATE_SAMPLING_PORT("S_SRC", -1, SOURCE, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "wrong_direction",
          CREATE_SAMPLING_PORT("S_SRC", 16, DESTINATION, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "bad_direction",
          CREATE_SAMPLING_PORT("S_SRC", 16, (PORT_DIRECTION_TYPE)7, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "wrong_period",
          CREATE_SAMPLING_PORT("S_SRC", 16, SOURCE, 99 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "null_id",
          CREATE_SAMPLING_PORT("S_SRC", 16, SOURCE, 100 * MS, NULL, &rc));
    CHECK("CREATE_SAMPLING_PORT", "source",
          CREATE_SAMPLING_PORT("S_SRC", 16, SOURCE, 100 * MS, &s_src, &rc));
    CHECK("CREATE_SAMPLING_PORT", "twice",
          CREATE_SAMPLING_PORT("S_SRC", 16, SOURCE, 100 * MS, &sid, &rc));
    /* Already created comes first, whatever else is wrong. */
    CHECK("CREATE_SAMPLING_PORT", "twice_bad_direction",
          CREATE_SAMPLING_PORT("S_SRC", 16, (PORT_DIRECTION_TYPE)7, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "twice_negative_size",
          CREATE_SAMPLING_PORT("S_SRC", -1, SOURCE, 100 * MS, &sid, &rc));
    CHECK("CREATE_SAMPLING_PORT", "destination",
          CREATE_SAMPLING_PORT("S_DST", 16, DESTINATION, 100 * MS, &s_dst, &rc));

    /* WRITE_SAMPLING_MESSAGE */
    CHECK("WRITE_SAMPLING_MESSAGE", "bad_id", WRITE_SAMPLING_MESSAGE(99, buf, 1, &rc));
    CHECK("WRITE_SAMPLING_MESSAGE", "empty", WRITE_SAMPLING_MESSAGE(s_src, buf, 0, &rc));
    CHECK("WRITE_SAMPLING_MESSAGE", "too_long", WRITE_SAMPLING_MESSAGE(s_src, big, 17, &rc));
    CHECK("WRITE_SAMPLING_MESSAGE", "null_message",
          WRITE_SAMPLING_MESSAGE(s_src, NULL, 4, &rc));
    CHECK("WRITE_SAMPLING_MESSAGE", "destination", WRITE_SAMPLING_MESSAGE(s_dst, buf, 1, &rc));
    CHECK("WRITE_SAMPLING_MESSAGE", "ok", WRITE_SAMPLING_MESSAGE(s_src, buf, 5, &rc));

    /* READ_SAMPLING_MESSAGE */
    CHECK("READ_SAMPLING_MESSAGE", "bad_id",
          READ_SAMPLING_MESSAGE(99, buf, &len, &validity, &rc));
    CHECK("READ_SAMPLING_MESSAGE", "source",
          READ_SAMPLING_MESSAGE(s_src, buf, &len, &validity, &rc));
    CHECK("READ_SAMPLING_MESSAGE", "null_length",
          READ_SAMPLING_MESSAGE(s_dst, buf, NULL, &validity, &rc));
    CHECK("READ_SAMPLING_MESSAGE", "null_message",
          READ_SAMPLING_MESSAGE(s_dst, NULL, &len, &validity, &rc));
    len = 5;
    validity = VALID;
    CHECK("READ_SAMPLING_MESSAGE", "empty",
          READ_SAMPLING_MESSAGE(s_dst, buf, &len, &validity, &rc));
    VALUE("LENGTH_empty", len);
    VALUE("VALIDITY_empty", validity);
    CHECK("WRITE_SAMPLING_MESSAGE", "id_INT32_MIN",
          WRITE_SAMPLING_MESSAGE(INT32_MIN, buf, 1, &rc));

    /* GET_SAMPLING_PORT_ID / STATUS */
    CHECK("GET_SAMPLING_PORT_ID", "unknown", GET_SAMPLING_PORT_ID("NOPE", &sid, &rc));
    CHECK("GET_SAMPLING_PORT_ID", "ok", GET_SAMPLING_PORT_ID("S_DST", &sid, &rc));
    VALUE("SAMPLING_ID_matches", sid == s_dst);
    CHECK("GET_SAMPLING_PORT_STATUS", "bad_id", GET_SAMPLING_PORT_STATUS(99, &ss, &rc));
    CHECK("GET_SAMPLING_PORT_STATUS", "null", GET_SAMPLING_PORT_STATUS(s_src, NULL, &rc));
    CHECK("GET_SAMPLING_PORT_STATUS", "ok", GET_SAMPLING_PORT_STATUS(s_src, &ss, &rc));
    VALUE("REFRESH_PERIOD", ss.REFRESH_PERIOD);
    VALUE("MAX_MESSAGE_SIZE", ss.MAX_MESSAGE_SIZE);
    VALUE("PORT_DIRECTION", ss.PORT_DIRECTION);
    VALUE("LAST_MSG_VALIDITY", ss.LAST_MSG_VALIDITY);

    /* CREATE_QUEUING_PORT */
    CHECK("CREATE_QUEUING_PORT", "unknown_name",
          CREATE_QUEUING_PORT("NOPE", 8, 4, SOURCE, FIFO, &qid, &rc));
    /* A name that is not UTF-8 cannot be configured: no such port. */
    CHECK("CREATE_QUEUING_PORT", "not_utf8_name",
          CREATE_QUEUING_PORT("Q_\xff", 8, 4, SOURCE, FIFO, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "wrong_size",
          CREATE_QUEUING_PORT("Q_SRC", 9, 4, SOURCE, FIFO, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "wrong_nb",
          CREATE_QUEUING_PORT("Q_SRC", 8, 5, SOURCE, FIFO, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "wrong_direction",
          CREATE_QUEUING_PORT("Q_SRC", 8, 4, DESTINATION, FIFO, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "bad_discipline",
          CREATE_QUEUING_PORT("Q_SRC", 8, 4, SOURCE, (QUEUING_DISCIPLINE_TYPE)5, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "source",
          CREATE_QUEUING_PORT("Q_SRC", 8, 4, SOURCE, FIFO, &q_src, &rc));
    CHECK("CREATE_QUEUING_PORT", "twice",
          CREATE_QUEUING_PORT("Q_SRC", 8, 4, SOURCE, FIFO, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "twice_bad_discipline",
          CREATE_QUEUING_PORT("Q_SRC", 8, 4, SOURCE, (QUEUING_DISCIPLINE_TYPE)5, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "twice_bad_direction",
          CREATE_QUEUING_PORT("Q_SRC", 8, 4, (PORT_DIRECTION_TYPE)9, FIFO, &qid, &rc));
    CHECK("CREATE_QUEUING_PORT", "destination",
          CREATE_QUEUING_PORT("Q_DST", 8, 4, DESTINATION, PRIORITY, &q_dst, &rc));

    /* SEND_QUEUING_MESSAGE */
    CHECK("SEND_QUEUING_MESSAGE", "bad_id", SEND_QUEUING_MESSAGE(99, buf, 1, 0, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "bad_timeout", SEND_QUEUING_MESSAGE(q_src, buf, 1, -5, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "too_long", SEND_QUEUING_MESSAGE(q_src, big, 9, 0, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "empty", SEND_QUEUING_MESSAGE(q_src, buf, 0, 0, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "destination", SEND_QUEUING_MESSAGE(q_dst, buf, 1, 0, &rc));
    for (i = 0; i < 4; i++) {
        CHECK("SEND_QUEUING_MESSAGE", "ok", SEND_QUEUING_MESSAGE(q_src, buf, 8, 0, &rc));
    }
    CHECK("SEND_QUEUING_MESSAGE", "full_timeout_0", SEND_QUEUING_MESSAGE(q_src, buf, 1, 0, &rc));
    CHECK("SEND_QUEUING_MESSAGE", "full_from_init_timeout_10ms",
          SEND_QUEUING_MESSAGE(q_src, buf, 1, 10 * MS, &rc));

    /* GET_QUEUING_PORT_STATUS / ID */
    CHECK("GET_QUEUING_PORT_STATUS", "bad_id", GET_QUEUING_PORT_STATUS(99, &qs, &rc));
    CHECK("GET_QUEUING_PORT_STATUS", "ok", GET_QUEUING_PORT_STATUS(q_src, &qs, &rc));
    VALUE("NB_MESSAGE", qs.NB_MESSAGE);
    VALUE("MAX_NB_MESSAGE", qs.MAX_NB_MESSAGE);
    VALUE("MAX_MESSAGE_SIZE", qs.MAX_MESSAGE_SIZE);
    VALUE("PORT_DIRECTION", qs.PORT_DIRECTION);
    VALUE("WAITING_PROCESSES", qs.WAITING_PROCESSES);
    CHECK("GET_QUEUING_PORT_ID", "unknown", GET_QUEUING_PORT_ID("NOPE", &qid, &rc));
    CHECK("GET_QUEUING_PORT_ID", "ok", GET_QUEUING_PORT_ID("Q_DST", &qid, &rc));
    VALUE("QUEUING_ID_matches", qid == q_dst);

    /* RECEIVE_QUEUING_MESSAGE */
    CHECK("RECEIVE_QUEUING_MESSAGE", "bad_id", RECEIVE_QUEUING_MESSAGE(99, 0, buf, &len, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "source", RECEIVE_QUEUING_MESSAGE(q_src, 0, buf, &len, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "bad_timeout",
          RECEIVE_QUEUING_MESSAGE(q_dst, -7, buf, &len, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "null_length",
          RECEIVE_QUEUING_MESSAGE(q_dst, 0, buf, NULL, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "null_message",
          RECEIVE_QUEUING_MESSAGE(q_dst, 0, NULL, &len, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "empty_timeout_0",
          RECEIVE_QUEUING_MESSAGE(q_dst, 0, buf, &len, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "empty_from_init_timeout_10ms",
          RECEIVE_QUEUING_MESSAGE(q_dst, 10 * MS, buf, &len, &rc));

    /* CLEAR_QUEUING_PORT */
    CHECK("CLEAR_QUEUING_PORT", "source", CLEAR_QUEUING_PORT(q_src, &rc));
    CHECK("CLEAR_QUEUING_PORT", "bad_id", CLEAR_QUEUING_PORT(99, &rc));
    CHECK("CLEAR_QUEUING_PORT", "id_INT32_MIN", CLEAR_QUEUING_PORT(INT32_MIN, &rc));
    CHECK("CLEAR_QUEUING_PORT", "destination", CLEAR_QUEUING_PORT(q_dst, &rc));

    {
        PROCESS_ATTRIBUTE_TYPE a;
        memset(&a, 0, sizeof a);
        strncpy(a.NAME, "driver", sizeof a.NAME);
        a.ENTRY_POINT = (SYSTEM_ADDRESS_TYPE)driver;
        a.STACK_SIZE = 0;
        a.BASE_PRIORITY = 10;
        a.PERIOD = INFINITE_TIME_VALUE;
        a.TIME_CAPACITY = INFINITE_TIME_VALUE;
        a.DEADLINE = SOFT;
        CREATE_PROCESS(&a, &pid, &rc);
        START(pid, &rc);
    }
    CHECK("CREATE_ERROR_HANDLER", "init", CREATE_ERROR_HANDLER((SYSTEM_ADDRESS_TYPE)error_handler, 0, &rc));
    SET_PARTITION_MODE(NORMAL, &rc);
    fprintf(out, "SET_PARTITION_MODE returned rc=%s\n", rc_name(rc));
    return 1;
}
