//! `strftime_now(format)`, which Hugging Face gives templates (gpt-oss's writes today's date into its
//! system message; Llama 3.1's does too): the current UTC time formatted as Python's strftime does for
//! the directives templates use. `SOURCE_DATE_EPOCH` (seconds), where set, stands for now, as in
//! reproducible builds: tests render against goldens made on another day.

// web-time: the browser has no std clock (SystemTime::now panics in wasm); there it reads Date.now().
use web_time::{SystemTime, UNIX_EPOCH};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Seconds since the Unix epoch, now or as SOURCE_DATE_EPOCH says.
fn now() -> i64 {
    if let Some(s) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return s;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The proleptic Gregorian (year, month 1-12, day 1-31) of a count of days since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + (month <= 2) as i64;
    (year, month, day)
}

/// `format` with %Y %m %d %e %H %M %S %y %B %b %A %a %j %% replaced for UTC time `t` (seconds since
/// the epoch); other directives are left as they are.
pub fn strftime(format: &str, t: i64) -> String {
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    let weekday = (days + 3).rem_euclid(7) as usize; // 1970-01-01 was a Thursday
    let day_of_year = days - days_from_year_start(year) + 1;
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push('%');
            break;
        };
        let month_name = MONTHS[month as usize - 1];
        match d {
            'Y' => out += &year.to_string(),
            'y' => out += &format!("{:02}", year.rem_euclid(100)),
            'm' => out += &format!("{month:02}"),
            'd' => out += &format!("{day:02}"),
            'e' => out += &format!("{day:2}"),
            'H' => out += &format!("{:02}", secs / 3600),
            'M' => out += &format!("{:02}", secs / 60 % 60),
            'S' => out += &format!("{:02}", secs % 60),
            'j' => out += &format!("{day_of_year:03}"),
            'B' => out += month_name,
            'b' => out += &month_name[..3],
            'A' => out += DAYS[weekday],
            'a' => out += &DAYS[weekday][..3],
            '%' => out.push('%'),
            other => {
                out.push('%');
                out.push(other);
            }
        }
    }
    out
}

/// Days from 1970-01-01 to January 1 of `year`.
fn days_from_year_start(year: i64) -> i64 {
    let y = year - 1;
    let leaps = |y: i64| y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400);
    (year - 1970) * 365 + leaps(y) - leaps(1969)
}

/// strftime of now.
pub fn strftime_now(format: &str) -> String {
    strftime(format, now())
}

#[cfg(test)]
mod tests {
    use super::strftime;

    #[test]
    fn dates_as_python_formats_them() {
        // Values from Python's time.strftime(f, time.gmtime(t)).
        let f = "%Y-%m-%d %H:%M:%S %a %A %b %B %j %y %e %% %Q";
        assert_eq!(
            strftime(f, 0),
            "1970-01-01 00:00:00 Thu Thursday Jan January 001 70  1 % %Q"
        );
        assert_eq!(
            strftime(f, 951_782_400),
            "2000-02-29 00:00:00 Tue Tuesday Feb February 060 00 29 % %Q"
        );
        assert_eq!(
            strftime(f, 1_798_761_599),
            "2026-12-31 23:59:59 Thu Thursday Dec December 365 26 31 % %Q"
        );
    }
}
