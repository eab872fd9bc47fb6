"""Which AgentDojo tools each suite has, where they live, and which of them read
third-party content (served as their own `[[tool]]`, labelled `untrusted = true`).

Imported by the server (inside a box, where importing the suites themselves would cost
~6 s: they pull in every model SDK), so it names only the light tool modules. The driver
checks at start that these lists are exactly each suite's tools (`check_against`).
"""

TOOLS = "agentdojo.default_suites.v1.tools."

# suite -> (tool module, function names)
SUITES = {
    "banking": [
        ("banking_client", ["get_iban", "send_money", "schedule_transaction",
                            "update_scheduled_transaction", "get_balance",
                            "get_most_recent_transactions", "get_scheduled_transactions"]),
        ("file_reader", ["read_file"]),
        ("user_account", ["get_user_info", "update_password", "update_user_info"]),
    ],
    "slack": [
        ("slack", ["get_channels", "add_user_to_channel", "read_channel_messages", "read_inbox",
                   "send_direct_message", "send_channel_message", "get_users_in_channel",
                   "invite_user_to_slack", "remove_user_from_slack"]),
        ("web", ["get_webpage", "post_webpage"]),
    ],
    "travel": [
        ("travel_booking_client", [
            "get_user_information", "get_all_hotels_in_city", "get_hotels_prices",
            "get_rating_reviews_for_hotels", "get_hotels_address", "get_all_restaurants_in_city",
            "get_cuisine_type_for_restaurants", "get_restaurants_address",
            "get_rating_reviews_for_restaurants", "get_dietary_restrictions_for_all_restaurants",
            "get_contact_information_for_restaurants", "get_price_for_restaurants",
            "check_restaurant_opening_hours", "get_all_car_rental_companies_in_city",
            "get_car_types_available", "get_rating_reviews_for_car_rental",
            "get_car_fuel_options", "get_car_rental_address", "get_car_price_per_day",
            "reserve_hotel", "reserve_car_rental", "reserve_restaurant", "get_flight_information"]),
        ("calendar_client", ["create_calendar_event", "search_calendar_events",
                             "get_day_calendar_events", "cancel_calendar_event"]),
        ("email_client", ["send_email"]),
    ],
    "workspace": [
        ("email_client", ["send_email", "delete_email", "get_unread_emails", "get_sent_emails",
                          "get_received_emails", "get_draft_emails", "search_emails",
                          "search_contacts_by_name", "search_contacts_by_email"]),
        ("calendar_client", ["get_current_day", "search_calendar_events",
                             "get_day_calendar_events", "create_calendar_event",
                             "cancel_calendar_event", "reschedule_calendar_event",
                             "add_calendar_event_participants"]),
        ("cloud_drive_client", ["append_to_file", "search_files_by_filename", "create_file",
                                "delete_file", "get_file_by_id", "list_files", "share_file",
                                "search_files"]),
    ],
}

# The tools whose results carry text someone else wrote (where AgentDojo's injection
# vectors sit): web pages, files and bills from others, transaction subjects senders chose,
# channel names and messages, reviews, emails, invitations' descriptions, shared files.
READERS = {
    "banking": {"read_file", "get_most_recent_transactions"},
    "slack": {"get_webpage", "get_channels", "read_channel_messages", "read_inbox"},
    "travel": {"get_rating_reviews_for_hotels", "get_rating_reviews_for_restaurants",
               "get_rating_reviews_for_car_rental"},
    "workspace": {"get_unread_emails", "get_sent_emails", "get_received_emails",
                  "get_draft_emails", "search_emails", "search_calendar_events",
                  "get_day_calendar_events", "search_files_by_filename", "get_file_by_id",
                  "list_files", "search_files"},
}

# The two [[tool]] names of a suite's servers; exposed tool names are PREFIX_TOOL.
def server_names(suite):
    return {"tools": suite, "readers": f"{suite}_readers"}


def exposed(suite, tool):
    """The name a tool has behind boxmaker (its server's prefix, then the tool)."""
    role = "readers" if tool in READERS[suite] else "tools"
    return f"{server_names(suite)[role]}_{tool}"


def tool_names(suite):
    return [name for _, names in SUITES[suite] for name in names]


def check_against(suite, agentdojo_tools):
    mine = tool_names(suite)
    theirs = [t.name for t in agentdojo_tools]
    if sorted(mine) != sorted(theirs):
        raise SystemExit(f"bench/agentdojo/suites.py is out of date for {suite}: {mine} != {theirs}")
    unknown = READERS[suite] - set(mine)
    if unknown:
        raise SystemExit(f"readers {unknown} are not {suite} tools")
