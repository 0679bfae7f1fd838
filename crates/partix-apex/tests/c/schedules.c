/*
 * The Part 2 module schedule services with a configuration (PARTIX_CONFIG=two_schedules.xml):
 * run once as partition 1 (a system partition) and once as partition 2 (not one). Prints
 * "SERVICE CASE rc=NAME" and "VALUE NAME CASE N" lines like services.c.
 */
#include <arinc653/apex.h>

#include <stdio.h>

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

int main(void)
{
    RETURN_CODE_TYPE rc;
    SCHEDULE_ID_TYPE id = -1;
    PARTITION_STATUS_TYPE part;
    SCHEDULE_STATUS_TYPE st; /* the standard's name */

    GET_PARTITION_STATUS(&part, &rc);
    printf("VALUE IDENTIFIER partition %d\n", (int)part.IDENTIFIER);
    GET_MODULE_SCHEDULE_ID("degraded", &id, &rc);
    printf("GET_MODULE_SCHEDULE_ID known rc=%s\n", rc_name(rc));
    printf("VALUE SCHEDULE_ID degraded %d\n", (int)id);
    GET_MODULE_SCHEDULE_ID("nominal", &id, &rc);
    printf("VALUE SCHEDULE_ID nominal %d\n", (int)id);
    GET_MODULE_SCHEDULE_ID("missing", &id, &rc);
    printf("GET_MODULE_SCHEDULE_ID unknown rc=%s\n", rc_name(rc));
    SET_MODULE_SCHEDULE(9999, &rc);
    printf("SET_MODULE_SCHEDULE unknown_id rc=%s\n", rc_name(rc));
    SET_MODULE_SCHEDULE(-1, &rc);
    printf("SET_MODULE_SCHEDULE negative_id rc=%s\n", rc_name(rc));
    SET_MODULE_SCHEDULE(7, &rc);
    printf("SET_MODULE_SCHEDULE known rc=%s\n", rc_name(rc));
    GET_MODULE_SCHEDULE_STATUS(&st, &rc);
    printf("GET_MODULE_SCHEDULE_STATUS ok rc=%s\n", rc_name(rc));
    /* A system partition's SET is seen at once: it is the next schedule. */
    printf("VALUE CURRENT_SCHEDULE after_set %d\n", (int)st.CURRENT_SCHEDULE);
    printf("VALUE NEXT_SCHEDULE after_set %d\n", (int)st.NEXT_SCHEDULE);
    return 0;
}
