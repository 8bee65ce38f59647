import java.io.BufferedReader;
import java.io.FileReader;
import org.memest.Memest;
import org.memest.MemestException;

/** Java front end of tests/crosslang: answers each line "name<TAB>request" with Memest.request
 *  and prints "name<TAB>response" on one line; a refused request prints the error rebuilt from
 *  the MemestException (code, field, message). */
public class CrossLang {
  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  public static void main(String[] args) throws Exception {
    StringBuilder out = new StringBuilder();
    try (BufferedReader in = new BufferedReader(new FileReader(args[0], java.nio.charset.StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        int tab = line.indexOf('\t');
        if (tab < 0) continue;
        String name = line.substring(0, tab);
        String answer;
        try {
          answer = Memest.request(line.substring(tab + 1)).replace('\n', ' ');
        } catch (MemestException e) {
          answer = "{\"ok\": false, \"error\": {\"code\": " + quote(e.code()) + ", \"field\": "
              + quote(e.field()) + ", \"message\": " + quote(e.getMessage()) + "}}";
        }
        out.append(name).append('\t').append(answer).append('\n');
      }
    }
    System.out.print(out);
  }
}
