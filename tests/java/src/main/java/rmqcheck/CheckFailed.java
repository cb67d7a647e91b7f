package rmqcheck;

/** A check saw something other than what it expected; the message says both. */
final class CheckFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CheckFailed(String message) {
        super(message);
    }
}
