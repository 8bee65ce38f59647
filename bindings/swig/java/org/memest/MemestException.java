package org.memest;

/** A request libmemest refused: {@link #code()} is the status name ("invalid_argument") and
 *  {@link #field()} the request field at fault ("parallel.tp"; "" when not about one field). */
public class MemestException extends Exception {
  private static final long serialVersionUID = 1L;
  private final int status;
  private final String code;
  private final String field;

  public MemestException(int status, String code, String field, String message) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }

  /** The numeric memest_status. */
  public int status() { return status; }
  /** memest_status_name: "invalid_argument", "unknown_preset", ... */
  public String code() { return code; }
  /** The request field at fault, or "". */
  public String field() { return field; }
}
