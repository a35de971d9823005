from memkit._filters.evaluate import MISSING, matches
from memkit._filters.tree import (
    BUILTIN_FIELDS,
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_VALUES,
    NUMBER_FIELDS,
    OPERATORS,
    SCOPE_FIELDS,
    TIME_FIELDS,
    And,
    Condition,
    Filter,
    Not,
    Operator,
    Or,
    Scalar,
    all_of,
    check_field_name,
    condition,
    fields_of,
    parse_filter,
)

__all__ = [
    "BUILTIN_FIELDS", "MAX_CONDITIONS", "MAX_DEPTH", "MAX_VALUES", "MISSING", "NUMBER_FIELDS",
    "OPERATORS", "SCOPE_FIELDS", "TIME_FIELDS",
    "And", "Condition", "Filter", "Not", "Operator", "Or", "Scalar",
    "all_of", "check_field_name", "condition", "fields_of", "matches", "parse_filter",
]
